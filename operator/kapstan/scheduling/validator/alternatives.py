"""Each claim's alternatives: the other flavors the plan says could stand in for the chosen one.

An alternative is checked by swapping it into the claim's node (`hosts.new_host`) with the rest of the
plan unchanged: it must be on sale to the pool, hold the claim's pods within the pool's limits, and be
indistinguishable from the chosen flavor to every hard cross-pod rule, so a launch that falls back to it
keeps the plan valid.
"""

from __future__ import annotations

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.model import Plan, Snapshot
from kapstan.scheduling.topology import Group, spread_group, term_group
from kapstan.scheduling.validator.accounting import pool_usage
from kapstan.scheduling.validator.hosts import (
    Host,
    check_host,
    claim_hostname,
    claim_labels,
    counts_on,
    new_host,
    offering_problems,
    price_in,
)


def check_alternatives(snapshot: Snapshot, plan: Plan, hosts: list[Host], violations: list[str]) -> None:
    """Each claim's alternatives are other flavors of its pool on sale in its zone and capacity type,
    cheapest first, that hold its pods within the pool's limits (with the rest of the plan), and that
    no hard cross-pod rule can tell from the chosen flavor: the same value for every topology key a hard
    term counts by, and the same admission by every spread constraint's node filter."""
    pools = {pool.name: pool for pool in snapshot.node_pools}
    flavors = {it.name: it for it in snapshot.instance_types}
    by_name = {host.name: host for host in hosts}
    usage = pool_usage(snapshot, plan)
    groups = _hard_groups(snapshot)
    keys = {group.key for group in groups}
    for index, claim in enumerate(plan.node_claims):
        pool, chosen = pools.get(claim.node_pool), flavors.get(claim.instance_type)
        host = by_name.get(claim_hostname(claim, index))
        if pool is None or chosen is None or host is None:
            continue  # reported with the claim itself
        label = f"nodeclaim #{index} ({claim.node_pool}/{claim.instance_type})"
        if len(set(claim.alternatives)) != len(claim.alternatives) or chosen.name in claim.alternatives:
            violations.append(f"{label}: alternatives {list(claim.alternatives)} repeat a flavor")
        ranks = []
        for name in claim.alternatives:
            flavor = flavors.get(name)
            if flavor is None:
                violations.append(f"{label}: alternative {name} is no flavor")
                continue
            found = offering_problems(pool, flavor, claim)
            ranks.append((price_in(flavor, claim) or 0.0, name))
            kept = {key: value for key, value in host.labels.items() if key not in chosen.labels}
            labels = {**kept, **claim_labels(pool, flavor, claim)}
            conflict = reqs.first_conflict(reqs.build(pool.requirements), labels)
            if conflict is not None:
                found.append(f"breaks NodePool requirement {conflict.describe()}")
            swapped = new_host(snapshot, labels, pool, flavor, host.placed)
            found += check_host(swapped)
            used = res.add(res.subtract(usage[pool.name], chosen.capacity), flavor.capacity)
            found += [
                f"limit {key} exceeded" for key, limit in pool.limits.items() if used.get(key, 0) > limit
            ]
            found += [f"{key} differs" for key in sorted(keys) if labels.get(key) != host.labels.get(key)]
            if any(counts_on(group, swapped) != counts_on(group, host) for group in groups):
                found.append("a spread constraint counts its node differently")
            violations += [f"{label}: alternative {name}: {problem}" for problem in found]
        if ranks != sorted(ranks):
            violations.append(f"{label}: alternatives {list(claim.alternatives)} are not cheapest first")


def _hard_groups(snapshot: Snapshot) -> set[Group]:
    """The groups of every hard pod affinity, anti-affinity and spread term, bound pods' included."""
    groups: set[Group] = set()
    for pod in (*snapshot.pods, *(p for node in snapshot.nodes for p in node.pods)):
        groups |= {term_group(term) for term in (*pod.affinity, *pod.anti_affinity)}
        groups |= {spread_group(pod, c) for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"}
    return groups
