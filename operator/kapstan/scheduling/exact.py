"""The exact pass (twin of `rust/src/solver/exact.rs`): for a small batch, the cheapest set of new claims
for the pods the cost pass may move, found by a bounded search instead of local moves.

Greedy placement plus the cost pass's local moves leave money on the table on small batches: 25 pods of 2.5
CPU on flavors of 8 CPU at 7.0/h and 12 CPU at 9.9/h get 3 + 4 nodes (60.6/h) where 7 + 1 cost 58.9/h. Here
the pods are grouped into shapes (pods equal but for their name and the labels no selector reads, at the same
relaxation level); every (NodePool, flavor) column says which shapes it can hold, at what price, and which
pairs of shapes cannot share one of its nodes; all of that is asked of the scheduler's own checks, on probe
claims opened and taken back, so requirements, taints, host ports, DaemonSet overhead and hostname
anti-affinity are the greedy's own rules. `exact_search` finds the cheapest cover of the shapes by packing
patterns; the cover is then placed with the same checks, and kept only when every pod finds its place and the
plan is strictly cheaper than the one it replaces, so the pass is never worse than the cost pass before it.

Only pods whose constraints stay within their own node take part: no topology spread or pod affinity,
anti-affinity (their own or another pod's against them) on the hostname only, none of the pods another
pod's affinity or a zone-level spread counts (the cost pass's pinned claims stay as they are). A shape
goes to the first NodePool that can take it, as the greedy would open it, so pool weights still rule.
"""

from __future__ import annotations

from dataclasses import replace

from kapstan.scheduling.anchored import constrained_groups, is_constrained
from kapstan.scheduling.exact_search import SAVING, Column, Pattern, Search, patterns
from kapstan.scheduling.greedy import Checks, Scheduler, biggest_first
from kapstan.scheduling.improve import put_back, take_off
from kapstan.scheduling.model import HOSTNAME, Pod
from kapstan.scheduling.preferences import Preferences
from kapstan.scheduling.targets import Claim

MAX_PODS = 60
MAX_SHAPES = 8
VISITS_PER_COLUMN = 20_000
SEARCH_STEPS = 150_000


def exact(scheduler: Scheduler) -> None:
    """Replace the movable claims by the cheapest cover the search finds, when it is strictly cheaper."""
    pinned = constrained_groups(scheduler)
    movable = [c for c in scheduler.claims if not any(is_constrained(scheduler, p, pinned) for p in c.pods)]
    if not 0 < sum(len(c.pods) for c in movable) <= MAX_PODS:
        return
    pods = sorted((p for c in movable for p in c.pods), key=biggest_first)
    checks = {p.key: scheduler.checks(p, scheduler.placed_prefs[p.key]) for p in pods}
    if not all(_local(c) for c in checks.values()):
        return
    shapes = _shapes(scheduler, pods)
    if len(shapes) > MAX_SHAPES:
        return
    before = sum(c.price for c in movable)
    take_off(scheduler, movable)
    columns = _columns(scheduler, shapes, checks)
    chosen = _search(scheduler, shapes, columns, before) if columns else None
    if chosen is None or not _materialise(scheduler, shapes, checks, columns, chosen, before):
        put_back(scheduler, tuple(movable))


def _local(checks: Checks) -> bool:
    """Whether the pod's constraints are all about its own node."""
    return (
        not checks.spread
        and not checks.rules
        and not checks.affinity
        and all(a.key == HOSTNAME for a in (*checks.anti, *checks.symmetric_anti))
    )


def _level(prefs: Preferences) -> tuple[int, ...]:
    """How far a pod's preferences were relaxed: equal pods at equal levels enforce the same ones."""
    return (
        prefs.required_index,
        len(prefs.preferred_node),
        len(prefs.preferred_affinity),
        len(prefs.preferred_anti_affinity),
        len(prefs.spread_anyway),
        int(prefs.tolerate_prefer_no_schedule),
    )


def _read_keys(scheduler: Scheduler) -> frozenset[str]:
    """The label keys some selector of the problem reads: every group the topology counts, which holds the
    spread and (anti-)affinity selectors, preferred or required, of the pending pods and of those on existing
    nodes. Any other label tells pods apart for no constraint."""
    return frozenset(
        key
        for group in scheduler.topology.groups
        for key in (
            *(k for k, _ in group.selector.match_labels),
            *(e.key for e in group.selector.match_expressions),
        )
    )


def _shapes(scheduler: Scheduler, pods: list[Pod]) -> list[list[Pod]]:
    """The pods grouped by shape, shapes in the order their first pod comes: pods alike but for their name
    and the labels no selector reads."""
    read = _read_keys(scheduler)
    shapes: list[list[Pod]] = []
    signatures: list[tuple[Pod, tuple[int, ...]]] = []
    for pod in pods:
        labels = {k: v for k, v in pod.labels.items() if k in read}
        signature = (replace(pod, name="", labels=labels), _level(scheduler.placed_prefs[pod.key]))
        for at, known in enumerate(signatures):
            if known == signature:
                shapes[at].append(pod)
                break
        else:
            signatures.append(signature)
            shapes.append([pod])
    return shapes


def _probe(
    scheduler: Scheduler, view: int, first: Checks, flavor: str, second: Checks | None
) -> Claim | None:
    """A claim of the column holding the first pod (and the second, if given); the caller takes it off."""
    opened = scheduler.open_claim(scheduler.pools[view], first, restrict=frozenset((flavor,)))
    if not isinstance(opened, Claim):
        return None
    if second is not None and scheduler.try_claim(opened, second) is not None:
        take_off(scheduler, [opened])
        return None
    return opened


def _columns(scheduler: Scheduler, shapes: list[list[Pod]], checks: dict[str, Checks]) -> list[Column]:
    """Every (pool, flavor) some shape can use, with its prices and conflicts; [] when a shape fits no pool."""
    keys = sorted({k for shape in shapes for k, v in shape[0].requests.items() if v})
    by_column: dict[tuple[int, int], Column] = {}
    for s, shape in enumerate(shapes):
        first = checks[shape[0].key]
        view = next((v for v in range(len(scheduler.pools)) if _opens(scheduler, v, first)), None)
        if view is None:
            return []
        pool = scheduler.pools[view]
        for f, flavor in enumerate(pool.flavors):
            claim = _probe(scheduler, view, first, flavor.name, None)
            if claim is None:
                continue
            price = claim.price
            take_off(scheduler, [claim])
            column = by_column.get((view, f))
            if column is None:
                net = tuple(flavor.net.get(k, 0) for k in keys)
                column = by_column[(view, f)] = Column(view, flavor.name, net, {})
            column.prices[s] = price
    columns = [by_column[k] for k in sorted(by_column)]
    for column in columns:
        _find_conflicts(scheduler, shapes, checks, column)
    _limit_needs(scheduler, columns)
    return columns


def _opens(scheduler: Scheduler, view: int, checks: Checks) -> bool:
    opened = scheduler.open_claim(scheduler.pools[view], checks)
    if isinstance(opened, Claim):
        take_off(scheduler, [opened])
        return True
    return False


def _find_conflicts(
    scheduler: Scheduler, shapes: list[list[Pod]], checks: dict[str, Checks], column: Column
) -> None:
    """The pairs of shapes whose pods, with room for both, still cannot share a node of the column."""
    held = sorted(column.prices)
    flavor = next(f for f in scheduler.pools[column.view].flavors if f.name == column.flavor)
    for i, s in enumerate(held):
        for t in held[i:]:
            if s == t and len(shapes[s]) < 2:
                continue
            first, second = shapes[s][0], shapes[t][1 if s == t else 0]
            both = {
                k: first.requests.get(k, 0) + second.requests.get(k, 0)
                for k in {*first.requests, *second.requests}
            }
            if any(v > flavor.net.get(k, 0) for k, v in both.items() if v):
                continue
            claim = _probe(scheduler, column.view, checks[first.key], column.flavor, checks[second.key])
            if claim is None:
                column.conflicts.add((s, t))
            else:
                take_off(scheduler, [claim])


def _limit_needs(scheduler: Scheduler, columns: list[Column]) -> None:
    """What one node of each column takes from the limit counters (every pool's limited keys in turn)."""
    counters = [(v, key) for v, view in enumerate(scheduler.pools) for key in view.remaining]
    for column in columns:
        flavor = next(f for f in scheduler.pools[column.view].flavors if f.name == column.flavor)
        column.limits = tuple(
            0 if v != column.view else (1000 if key == "nodes" else flavor.it.capacity.get(key, 0))
            for v, key in counters
        )


def _search(
    scheduler: Scheduler, shapes: list[list[Pod]], columns: list[Column], before: float
) -> list[Pattern] | None:
    keys = sorted({k for shape in shapes for k, v in shape[0].requests.items() if v})
    requests = [tuple(shape[0].requests.get(k, 0) for k in keys) for shape in shapes]
    demand = tuple(len(shape) for shape in shapes)
    found: list[Pattern] = []
    for at, column in enumerate(columns):
        made = patterns(at, column, requests, demand, VISITS_PER_COLUMN)
        if made is None:
            return None
        found.extend(made)
    ratios = tuple(_ratio(columns, found, requests, k) for k in range(len(keys)))
    limits = tuple(left for view in scheduler.pools for left in view.remaining.values())
    search = Search(found, requests, ratios, SEARCH_STEPS, before)
    chosen = search.run(demand, limits)
    return None if chosen is None else [found[i] for i in chosen]


def _ratio(columns: list[Column], found: list[Pattern], requests: list[tuple[int, ...]], k: int) -> float:
    """The least any node can cost per unit of resource `k` its pods use: every node holds a subset of
    some maximal pattern and costs at least its column's cheapest price (0 when no pattern uses `k`)."""
    ratios = []
    for p in found:
        used = sum(n * req[k] for n, req in zip(p.counts, requests, strict=True))
        if used > 0:
            ratios.append(min(columns[p.column].prices.values()) / used)
    return min(ratios) if ratios else 0.0


def _materialise(
    scheduler: Scheduler,
    shapes: list[list[Pod]],
    checks: dict[str, Checks],
    columns: list[Column],
    chosen: list[Pattern],
    before: float,
) -> bool:
    """Place the cover's claims, pods in shape order; keep them if every pod fits and they cost less."""
    left = [list(shape) for shape in shapes]
    created: list[Claim] = []
    for pattern in chosen:
        column = columns[pattern.column]
        claim: Claim | None = None
        for s, count in enumerate(pattern.counts):
            for pod in left[s][:count]:
                if claim is None:
                    claim = _probe(scheduler, column.view, checks[pod.key], column.flavor, None)
                    if claim is None:
                        take_off(scheduler, created)
                        return False
                    created.append(claim)
                elif scheduler.try_claim(claim, checks[pod.key]) is not None:
                    take_off(scheduler, created)
                    return False
            del left[s][:count]
    if any(left) or sum(c.price for c in created) >= before - SAVING:
        take_off(scheduler, created)
        return False
    return True
