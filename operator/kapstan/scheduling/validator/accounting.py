"""What the plan counts: every pending pod placed once or reported, and each NodePool within its limits.

These checks read the plan and the snapshot's totals, no node's contents; the alternatives check reuses
`pool_usage` to see whether a claim's other flavors would still fit its pool's limits.
"""

from __future__ import annotations

from collections.abc import Mapping

from kapstan.scheduling import resources as res
from kapstan.scheduling.model import Plan, Pod, Snapshot


def check_accounting(plan: Plan, pods: Mapping[str, Pod], violations: list[str]) -> None:
    seen: dict[str, int] = {}
    for placed in [*plan.existing_nodes.values(), *(c.pods for c in plan.node_claims)]:
        for key in placed:
            seen[key] = seen.get(key, 0) + 1
    for key, count in seen.items():
        if key not in pods:
            violations.append(f"plan places unknown pod {key}")
        elif count > 1:
            violations.append(f"pod {key} is placed {count} times")
        if key in plan.unschedulable:
            violations.append(f"pod {key} is both placed and unschedulable")
    for key in pods:
        if key not in seen and key not in plan.unschedulable:
            violations.append(f"pod {key} is neither placed nor reported unschedulable")
        if key in plan.unschedulable and not plan.unschedulable[key].strip():
            violations.append(f"pod {key} is unschedulable without a reason")


def pool_usage(snapshot: Snapshot, plan: Plan) -> dict[str, dict[str, int]]:
    """Per NodePool, what its nodes and the plan's claims in it count against its limits."""
    flavors = {it.name: it for it in snapshot.instance_types}
    usage = {}
    for pool in snapshot.node_pools:
        claims = [c for c in plan.node_claims if c.node_pool == pool.name and c.instance_type in flavors]
        used = res.add(pool.usage, res.total(flavors[c.instance_type].capacity for c in claims))
        used["nodes"] = pool.usage.get("nodes", 0) + 1000 * len(claims)
        usage[pool.name] = used
    return usage


def check_limits(snapshot: Snapshot, plan: Plan, violations: list[str]) -> None:
    usage = pool_usage(snapshot, plan)
    for pool in snapshot.node_pools:
        used = usage[pool.name]
        planned = used["nodes"] > pool.usage.get("nodes", 0)
        for key, limit in pool.limits.items():
            if used.get(key, 0) > limit and planned:
                violations.append(f"NodePool {pool.name}: limit {key} exceeded ({used[key]} > {limit} milli)")
