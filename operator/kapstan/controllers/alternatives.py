"""Ranked fallback flavors for a planned NodeClaim, for when its chosen MD cannot grow.

Karpenter hands the cloud provider a NodeClaim that allows several instance types and lets it launch the
cheapest one it can get. kapstan's solver picks one flavor per claim; this module adds the others that
could carry exactly the same pods in the same zone, cheapest first, so that a launch that finds the chosen
MD at its max size can fall back without a new batch. "Could carry" is decided by the plan validator on a
snapshot holding only this claim's pods, with the NodePool's limits reduced by the rest of the plan. That
is conservative: a pod whose constraints involve pods elsewhere (affinity, zone spread) fails the check,
and its claim gets no alternatives rather than a wrong one.
"""

from __future__ import annotations

from dataclasses import replace

from kapstan.scheduling.model import InstanceType, NodePool, Plan, PlannedNodeClaim, Snapshot
from kapstan.scheduling.validator import validate

MAX_ALTERNATIVES = 4


def ranked_alternatives(
    claim: PlannedNodeClaim, plan: Plan, snapshot: Snapshot, limit: int = MAX_ALTERNATIVES
) -> list[str]:
    """Up to ``limit`` other flavors that hold ``claim``'s pods within the pool's limits, cheapest first."""
    pools = {pool.name: pool for pool in snapshot.node_pools}
    flavors = {flavor.name: flavor for flavor in snapshot.instance_types}
    pool, chosen = pools.get(claim.node_pool), flavors.get(claim.instance_type)
    if pool is None or chosen is None:
        return []
    pods = {pod.key: pod for pod in snapshot.pods}
    alone = Snapshot(
        pods=tuple(pods[key] for key in claim.pods if key in pods),
        instance_types=snapshot.instance_types,
        node_pools=(_without_the_rest(pool, claim, plan, flavors),),
        daemonsets=snapshot.daemonsets,
        namespace_labels=snapshot.namespace_labels,
    )
    priced = []
    for flavor in snapshot.instance_types:
        price = _price(flavor, claim)
        if flavor.name != chosen.name and price is not None:
            priced.append((price, flavor.name, flavor))
    found: list[str] = []
    for price, _, flavor in sorted(priced, key=lambda entry: (entry[0], entry[1])):
        labels = {key: value for key, value in claim.labels.items() if key not in chosen.labels}
        candidate = replace(
            claim, instance_type=flavor.name, price_per_hour=price, labels={**labels, **flavor.labels}
        )
        if not validate(alone, Plan("alternatives", (candidate,), {}, {})):
            found.append(flavor.name)
            if len(found) == limit:
                break
    return found


def _price(flavor: InstanceType, claim: PlannedNodeClaim) -> float | None:
    prices = [
        offering.price
        for offering in flavor.offerings
        if offering.available and (offering.zone, offering.capacity_type) == (claim.zone, claim.capacity_type)
    ]
    return min(prices) if prices else None


def _without_the_rest(
    pool: NodePool, claim: PlannedNodeClaim, plan: Plan, flavors: dict[str, InstanceType]
) -> NodePool:
    """``pool`` with what the plan's other claims in it use added to its usage."""
    usage = dict(pool.usage)
    others = [other for other in plan.node_claims if other is not claim and other.node_pool == pool.name]
    for other in others:
        capacity = flavors[other.instance_type].capacity if other.instance_type in flavors else {}
        for name, amount in {**capacity, "nodes": 1000}.items():
            usage[name] = usage.get(name, 0) + amount
    return replace(pool, usage=usage)
