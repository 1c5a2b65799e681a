"""A NodePool at its fixed point: no consolidation once the pool costs little more than its pods planned
from empty.

A consolidation command moves pods that kube-scheduler then places by its own scoring (LeastAllocated
spreads them over every node with room), not where kapstan's plan put them. On the live bench (issue 14,
``bench/LIVE.md``, second-run) seven of ten scale-down commands were followed within 15 s by a provisioner
NodeClaim for 1 to 10 pods that found no room after the drain: each a new, under-used node that gave the
next round its reason, and every round after the second saved 0.05-0.39/h (under 2% of the pool) for about
80 evictions. Searching candidate subsets cannot see that the fleet is already close to what it can be.

So the pool's whole consolidation is planned at once: every pod on the pool's nodes made pending and
placed from empty (nodes of other pools keep theirs). When the pool costs at most ``settled_within`` more
than that plan (3% by default, ``MinSaving``), it is settled: what is left to save is less than the
repair nodes the scheduler's placement costs, and underutilized consolidation leaves the pool alone.
Emptiness and drift are not affected. A pool whose pods the plan cannot all place is never settled (the
plan's price would be too low to compare).

Pure: the snapshot, the candidates and a solver in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kapstan.controllers.disruption.candidates import Candidate
from kapstan.controllers.disruption.consolidation import Solve, without
from kapstan.scheduling.model import Snapshot


def from_empty_price(
    snapshot: Snapshot,
    fleet: Sequence[Candidate],
    leaving: Mapping[str, Iterable[str]],
    solve: Solve,
) -> float | None:
    """The price per hour of the new nodes that the pods on ``fleet``'s nodes get when planned from empty
    (with the ``leaving`` nodes gone too); None when some of them cannot be placed."""
    removed = {**leaving, **{c.node: c.pods for c in fleet}}
    plan = solve(without(snapshot, removed))
    moving = {key for c in fleet for key in c.pods}
    if any(key in moving for key in plan.unschedulable):
        return None
    return round(sum(c.price_per_hour for c in plan.node_claims if moving.intersection(c.pods)), 6)


def settled_pools(
    snapshot: Snapshot,
    candidates: Sequence[Candidate],
    pools: Iterable[str],
    leaving: Mapping[str, Iterable[str]],
    solve: Solve,
    settled_within: float,
) -> dict[str, str]:
    """Of ``pools``, those that cost at most ``settled_within`` more than their pods planned from empty,
    each with the two prices; ``candidates`` are all the nodes disruption sees, blocked ones too."""
    found = {}
    for pool in sorted(set(pools)):
        fleet = [c for c in candidates if c.pool == pool]
        price = round(sum(c.price for c in fleet), 6)
        ideal = from_empty_price(snapshot, fleet, leaving, solve)
        if ideal is not None and price <= ideal * (1 + settled_within) + 1e-9:
            found[pool] = (
                f"settled: its nodes cost {price:g}/h, its pods planned from empty {ideal:g}/h "
                f"(within {settled_within:.0%})"
            )
    return found
