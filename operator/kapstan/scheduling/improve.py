"""The cost pass: after a feasible placement, re-pack small sets of claims into cheaper ones.

A move takes one or two claims off the plan, places their pods again on new claims that are held to one
flavor (falling back to any flavor), and keeps the result when it costs strictly less. One claim re-packed
into several smaller ones is the M -> N split Karpenter never makes; two claims re-packed is how a
greedy tail (three big nodes and a nearly empty one) turns into a cheaper mix. The work is bounded by a
count of pod placements (ten per pending pod, at most 20,000), not by a clock, so the result does not
depend on the machine's speed, and large plans still finish fast.

Claims holding pods that another pod's affinity or a zone-level spread counts are re-packed after the
others, with those pods held to their domains (anchored.py), so no constraint of a pod left in place moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from itertools import chain

from kapstan.scheduling import resources as res
from kapstan.scheduling.anchored import Anchors, constrained_counts, constrained_groups, is_constrained
from kapstan.scheduling.greedy import Checks, Scheduler, biggest_first
from kapstan.scheduling.greedy.order import interleaved, slot_paced
from kapstan.scheduling.mixed import MixedSplit, mixed_groups, splits
from kapstan.scheduling.model import ZONE, Pod
from kapstan.scheduling.targets import Claim, Flavor

PLACEMENTS_PER_POD = 10
BASE_PLACEMENTS = 2000
MAX_PLACEMENTS = 20_000
ALL_PAIRS_UP_TO = 40
PAIR_WINDOW = 8
FLAVORS_PER_MOVE = 4
GROUP_LIMIT = 16
PAIR = 2
SAVING = 1e-9


class Budget:
    def __init__(self, placements: int) -> None:
        self.left = placements

    def spend(self, placements: int) -> None:
        self.left -= placements


class Floors:
    """Per pod requests, the least a new claim holding such a pod can cost: the cheapest available offering
    of any pool's flavor whose net resources hold them. A claim's price is an available offering of its
    chosen flavor, which holds every pod on it, so no new claim for such a pod costs less (infinite when
    no flavor holds it, and then none opens)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.known: dict[tuple[tuple[str, int], ...], float] = {}

    def of(self, pod: Pod) -> float:
        key = tuple(sorted(pod.requests.items()))
        if key not in self.known:
            self.known[key] = min(
                (
                    o.price
                    for view in self.scheduler.pools
                    for f in view.flavors
                    if res.fits({}, pod.requests, f.net)
                    for o in f.it.offerings
                    if o.available
                ),
                default=math.inf,
            )
        return self.known[key]


def improve(scheduler: Scheduler) -> None:
    budget = Budget(min(PLACEMENTS_PER_POD * len(scheduler.snapshot.pods) + BASE_PLACEMENTS, MAX_PLACEMENTS))
    groups = constrained_groups(scheduler)
    floors = Floors(scheduler)
    anchors = Anchors()
    _mix(scheduler, groups, floors, budget)
    improved = True
    while improved and budget.left > 0:
        improved = False
        free: list[Claim] = []
        held: list[Claim] = []
        for claim in scheduler.claims:
            constrained = any(is_constrained(scheduler, p, groups) for p in claim.pods)
            (held if constrained else free).append(claim)
        for claims in chain(_moves(free), _zone_groups(held)):
            if budget.left <= 0:
                break
            if all(c in scheduler.claims for c in claims) and _repack(
                scheduler, claims, budget, groups, floors, anchors
            ):
                improved = True


def _mix(scheduler: Scheduler, groups: set[int], floors: Floors, budget: Budget) -> None:
    """The mixed-flavor move (mixed.py) once over the greedy plan's unconstrained claims, before the
    other moves: they then polish its claims, where a mix tried after them must beat claims they
    already packed tight in one resource, and rarely does."""
    free = [c for c in scheduler.claims if not any(is_constrained(scheduler, p, groups) for p in c.pods)]
    for claims in mixed_groups(free):
        if budget.left <= 0:
            break
        if all(c in scheduler.claims for c in claims):
            _repack_mixed(scheduler, claims, budget, floors)


def _moves(claims: list[Claim]) -> Iterator[tuple[Claim, ...]]:
    """Single claims, then pairs: all of them for small plans, neighbours by price otherwise."""
    for claim in claims:
        yield (claim,)
    ordered = sorted(claims, key=lambda c: (c.view.pool.name, -c.price, c.index))
    window = len(ordered) if len(ordered) <= ALL_PAIRS_UP_TO else PAIR_WINDOW
    for i, first in enumerate(ordered):
        for second in ordered[i + 1 : i + 1 + window]:
            yield (first, second)


def _zone_groups(claims: list[Claim]) -> Iterator[tuple[Claim, ...]]:
    """The claims of one NodePool and zone together, up to GROUP_LIMIT at a time in index order. Anchored
    pods move only within their zone, and one move over many of a zone's claims fills their holes first
    fit, biggest pod first, where single and pair moves only shuffle the same holes around."""
    groups: dict[tuple[str, str], list[Claim]] = {}
    for claim in claims:
        groups.setdefault((claim.view.pool.name, claim.domain(ZONE) or ""), []).append(claim)
    for key in sorted(groups):
        members = groups[key]
        for start in range(0, len(members), GROUP_LIMIT):
            yield tuple(members[start : start + GROUP_LIMIT])


def _candidate_flavors(claims: tuple[Claim, ...], pods: list[Pod]) -> list[str | None]:
    """Flavors worth forcing the pods into: the ones in use, then those cheapest per pod of this mix."""
    # A move over a zone's claims tries the efficient flavors only: the flavors its many claims are on
    # would multiply its placements, and one of them rarely packs a whole zone best.
    chosen = [c.chosen.name for c in claims] if len(claims) <= PAIR else []
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
    scheduler: Scheduler,
    order: list[Pod],
    restrict: frozenset[str] | None,
    budget: Budget,
    anchored: dict[str, Checks],
    floors: Floors,
    ceiling: float = math.inf,
    spent: float = 0.0,
) -> list[Claim] | None:
    """Place the pods (biggest first, as `_repack` sorted them) on new claims only, held to the flavors
    of `restrict` where they fit (and anchored pods to their domains); None (and nothing left behind)
    when some pod cannot be placed, or as soon as the new claims and what the move `spent` before them
    cost `ceiling` or more: claims only grow and multiply, so such a move could no longer be kept."""
    created: list[Claim] = []
    # Each created claim's price, in `created`'s order: only the claim that takes a pod changes price, so
    # it alone is priced again (pricing them all after every pod was a fifth of spread-1000's Rust solve).
    prices: list[float] = []
    for pod in order:
        budget.spend(1)
        checks = anchored.get(pod.key) or scheduler.checks(pod, scheduler.placed_prefs[pod.key])
        # `might_take` first, as the greedy placement asks it: most created claims refuse most pods.
        joined = next(
            (
                at
                for at, claim in enumerate(created)
                if scheduler.might_take(claim, checks) and scheduler.try_claim(claim, checks) is None
            ),
            None,
        )
        if joined is not None:
            prices[joined] = created[joined].price
        else:
            # A new claim costs at least the pod's floor: when that reaches the ceiling, give the move up
            # before opening it, as the check after opening would (the same placements spent).
            if spent + sum(prices) + floors.of(pod) >= ceiling:
                take_off(scheduler, created)
                return None
            opened = _open(scheduler, checks, restrict)
            if opened is None:
                take_off(scheduler, created)
                return None
            created.append(opened)
            prices.append(opened.price)
        if spent + sum(prices) >= ceiling:
            take_off(scheduler, created)
            return None
    return created


def _open(scheduler: Scheduler, checks: Checks, restrict: frozenset[str] | None) -> Claim | None:
    """A new claim for the pod from the first pool that takes it, held to `restrict` if any can be."""
    for flavor in dict.fromkeys([restrict, None]):
        for view in scheduler.pools:
            opened = scheduler.open_claim(view, checks, restrict=flavor)
            if isinstance(opened, Claim):
                return opened
    return None


def _repack(
    scheduler: Scheduler,
    claims: tuple[Claim, ...],
    budget: Budget,
    groups: set[int],
    floors: Floors,
    anchors: Anchors,
) -> bool:
    before = sum(c.price for c in claims)
    pods = [p for c in claims for p in c.pods]
    if not pods:
        return False
    strategies = _candidate_flavors(claims, pods)
    # Every strategy places the pods in the same order: sorted once here, not per strategy.
    order = sorted(pods, key=biggest_first)
    anchored = anchors.checks(scheduler, claims, groups)
    counts = constrained_counts(scheduler, pods, groups) if anchored else None
    take_off(scheduler, claims)
    # The cheapest move so far, its claims taken off and kept aside: placing its pods again once the
    # strategies are all tried would give the same claims (the pass is deterministic and the plan is back
    # where it was), at a placement per pod.
    best: tuple[float, list[Claim]] | None = None
    for name in strategies:
        restrict = None if name is None else frozenset((name,))
        if budget.left <= 0:
            break
        ceiling = before - SAVING if best is None else min(before - SAVING, best[0])
        created = _replace(scheduler, order, restrict, budget, anchored, floors, ceiling)
        if created is None:
            continue
        cost = sum(c.price for c in created)
        kept = counts is None or constrained_counts(scheduler, pods, groups) == counts
        take_off(scheduler, created)
        if kept and cost < before - SAVING and (best is None or cost < best[0]):
            best = (cost, created)
    if best is None:
        put_back(scheduler, claims)
        return False
    put_back(scheduler, tuple(best[1]))
    return True


def _repack_mixed(scheduler: Scheduler, claims: tuple[Claim, ...], budget: Budget, floors: Floors) -> bool:
    """The mixed-flavor move (mixed.py): each of its splits placed in turn, kept only when it costs
    strictly less than the claims it replaces and than the splits placed before it; the cheapest stays.
    The splits are placed interleaved, and only when none of them is kept so, slot-paced: where the
    interleave is kept, pacing it was dearer once the other moves had polished the plan (capi-1000)."""
    pods = [p for c in claims for p in c.pods]
    tries = splits(claims, pods) if pods else []
    if not tries:
        return False
    before = sum(c.price for c in claims) - SAVING
    take_off(scheduler, claims)
    for order in (interleaved, slot_paced):
        best: tuple[float, MixedSplit] | None = None
        for at, parts in enumerate(tries):
            if budget.left <= 0:
                break
            ceiling = before if best is None else min(before, best[0])
            created = _place_split(scheduler, parts, order, budget, floors, ceiling)
            if created is None:
                continue
            best = (sum(c.price for c in created), parts)
            if at + 1 < len(tries):
                take_off(scheduler, created)
            else:
                return True  # the last split is the cheapest placed: it stays where it is
        if best is not None:
            if _place_split(scheduler, best[1], order, budget, floors, math.inf) is not None:
                return True
            break
    put_back(scheduler, claims)
    return False


def _place_split(
    scheduler: Scheduler,
    parts: MixedSplit,
    order: Callable[[Sequence[Pod]], list[Pod]],
    budget: Budget,
    floors: Floors,
    ceiling: float,
) -> list[Claim] | None:
    """The split's parts placed one after the other in `order`, each on claims of its own; None
    (nothing left behind) when a part cannot be placed or all of them reach `ceiling`."""
    created: list[Claim] = []
    for pods, flavors in parts.parts():
        spent = sum(c.price for c in created)
        placed = _replace(scheduler, order(pods), flavors, budget, {}, floors, ceiling, spent)
        if placed is None:
            take_off(scheduler, created)
            return None
        created += placed
    return created
