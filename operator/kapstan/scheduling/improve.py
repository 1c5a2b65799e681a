"""The cost pass: after a feasible placement, re-pack small sets of claims into cheaper ones.

A move takes one or two claims off the plan, places their pods again on new claims that are held to one
flavor (falling back to any flavor), and keeps the result when it costs strictly less. One claim re-packed
into several smaller ones is the M -> N split Karpenter never makes; two claims re-packed is how a
greedy tail (three big nodes and a nearly empty one) turns into a cheaper mix. The work is bounded by a
count of pod placements (ten per pending pod, at most 20,000), not by a clock, so the result does not
depend on the machine's speed, and large plans still finish fast.

Claims holding pods that another pod's affinity or zone-level spread depends on are left alone: moving
them could break a constraint of a pod that is not being moved.
"""

from __future__ import annotations

from collections.abc import Iterator

from kapstan.scheduling.greedy import Scheduler, biggest_first
from kapstan.scheduling.model import HOSTNAME, Pod
from kapstan.scheduling.targets import Claim, Flavor
from kapstan.scheduling.topology import term_group

PLACEMENTS_PER_POD = 10
BASE_PLACEMENTS = 2000
MAX_PLACEMENTS = 20_000
ALL_PAIRS_UP_TO = 40
PAIR_WINDOW = 8
FLAVORS_PER_MOVE = 4
SAVING = 1e-9


class Budget:
    def __init__(self, placements: int) -> None:
        self.left = placements

    def spend(self, placements: int) -> None:
        self.left -= placements


def improve(scheduler: Scheduler) -> None:
    budget = Budget(min(PLACEMENTS_PER_POD * len(scheduler.snapshot.pods) + BASE_PLACEMENTS, MAX_PLACEMENTS))
    pinned = pinned_groups(scheduler)
    improved = True
    while improved and budget.left > 0:
        improved = False
        movable = [c for c in scheduler.claims if not any(is_pinned(scheduler, p, pinned) for p in c.pods)]
        for claims in _moves(movable):
            if budget.left <= 0:
                break
            if all(c in scheduler.claims for c in claims) and _repack(scheduler, claims, budget):
                improved = True


def pinned_groups(scheduler: Scheduler) -> set[int]:
    topo = scheduler.topology
    pods = [*scheduler.snapshot.pods, *(p for n in scheduler.snapshot.nodes for p in n.pods)]
    pinned = {topo.index[term_group(t)] for pod in pods for t in pod.affinity}
    pinned |= {topo.index[term_group(w.term)] for pod in pods for w in pod.preferred_affinity}
    pinned |= {rule.group for rule in topo.rules if rule.constraint.topology_key != HOSTNAME}
    return pinned


def is_pinned(scheduler: Scheduler, pod: Pod, pinned: set[int]) -> bool:
    return any(gid in pinned for gid in scheduler.topology.selecting(pod))


def _moves(claims: list[Claim]) -> Iterator[tuple[Claim, ...]]:
    """Single claims, then pairs: all of them for small plans, neighbours by price otherwise."""
    for claim in claims:
        yield (claim,)
    ordered = sorted(claims, key=lambda c: (c.view.pool.name, -c.price, c.index))
    window = len(ordered) if len(ordered) <= ALL_PAIRS_UP_TO else PAIR_WINDOW
    for i, first in enumerate(ordered):
        for second in ordered[i + 1 : i + 1 + window]:
            yield (first, second)


def _candidate_flavors(claims: tuple[Claim, ...], pods: list[Pod]) -> list[str | None]:
    """Flavors worth forcing the pods into: the ones in use, then those cheapest per pod of this mix."""
    chosen = [c.chosen.name for c in claims]
    count = len(pods)
    totals = {key: sum(p.requests.get(key, 0) for p in pods) for key in pods[0].requests}

    def per_pod(flavor: Flavor) -> tuple[float, float, str]:
        # How many average pods of this mix the flavor holds, in exact integers: net // (total / count).
        fit = min(
            (flavor.net.get(key, 0) * count // total for key, total in totals.items() if total > 0),
            default=count,
        )
        fit = min(fit, count)
        price = flavor.price(claims[0].view.base)
        return (price / fit if fit > 0 else float("inf"), price, flavor.name)

    ranked = sorted(claims[0].view.flavors, key=per_pod)
    efficient = [f.name for f in ranked[:FLAVORS_PER_MOVE] if per_pod(f)[0] != float("inf")]
    out: list[str | None] = [None]
    for name in [*efficient, *chosen]:
        if name not in out:
            out.append(name)
    if len(claims) == 1:
        out = [f for f in out if f is not None and f != claims[0].chosen.name]
    return out


def take_off(scheduler: Scheduler, claims: tuple[Claim, ...] | list[Claim]) -> None:
    for claim in claims:
        for pod in claim.pods:
            scheduler.topology.record(pod, claim.domain, claim.taints, -1)
        claim.view.charge(None, claim.chosen)
        scheduler.claims.remove(claim)


def put_back(scheduler: Scheduler, claims: tuple[Claim, ...]) -> None:
    for claim in claims:
        claim.view.charge(claim.chosen, None)
        for pod in claim.pods:
            scheduler.topology.record(pod, claim.domain, claim.taints)
        scheduler.claims.append(claim)
    scheduler.claims.sort(key=lambda c: c.index)


def _replace(
    scheduler: Scheduler, pods: list[Pod], restrict: str | None, budget: Budget
) -> list[Claim] | None:
    """Place the pods on new claims only, held to `restrict` where it fits; None (and nothing left
    behind) when some pod cannot be placed."""
    created: list[Claim] = []
    for pod in sorted(pods, key=biggest_first):
        budget.spend(1)
        checks = scheduler.checks(pod, scheduler.placed_prefs[pod.key])
        if any(scheduler.try_claim(claim, checks) is None for claim in created):
            continue
        opened: Claim | str = "not tried"
        for flavor in dict.fromkeys([restrict, None]):
            for view in scheduler.pools:
                opened = scheduler.open_claim(view, checks, restrict=flavor)
                if isinstance(opened, Claim):
                    break
            if isinstance(opened, Claim):
                break
        if not isinstance(opened, Claim):
            take_off(scheduler, created)
            return None
        created.append(opened)
    return created


def _repack(scheduler: Scheduler, claims: tuple[Claim, ...], budget: Budget) -> bool:
    before = sum(c.price for c in claims)
    pods = [p for c in claims for p in c.pods]
    if not pods:
        return False
    strategies = _candidate_flavors(claims, pods)
    take_off(scheduler, claims)
    best: tuple[float, str | None] | None = None
    for restrict in strategies:
        if budget.left <= 0:
            break
        created = _replace(scheduler, pods, restrict, budget)
        if created is None:
            continue
        cost = sum(c.price for c in created)
        take_off(scheduler, created)
        if cost < before - SAVING and (best is None or cost < best[0]):
            best = (cost, restrict)
    if best is None or _replace(scheduler, pods, best[1], budget) is None:
        put_back(scheduler, claims)
        return False
    return True
