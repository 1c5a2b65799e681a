"""Consolidation as a scheduling question: if these nodes went, where would their pods go, and at what
price?

The live snapshot is taken apart: the candidate nodes (and nodes already on their way out) leave it,
and the pods a drain would move from them become pending. The solver then places them. Every moved pod
placed on the remaining nodes means the candidates can simply be deleted; otherwise the new NodeClaims
the plan opens for them are the replacement, planned again to hold every moved pod on its own (the
other nodes closed to them: kube-scheduler does not follow the plan), and accepted only when it costs
less than the candidates by at least the minimum saving. Unlike Karpenter, a replacement may be several nodes (one large node whose
pods fit two cheaper small ones is replaced, M → N), and candidate sets are searched in several orders,
not only as prefixes of one sorted list.

Pure and synchronous: the controller runs it in a thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kapstan.api.wellknown import INSTANCE_TYPE
from kapstan.controllers.disruption.candidates import Candidate
from kapstan.scheduling.model import Node, Plan, PlannedNodeClaim, Pod, Snapshot

NODES = "nodes"

Solve = Callable[[Snapshot], Plan]

DELETE, REPLACE = "delete", "replace"


@dataclass(frozen=True)
class MinSaving:
    """How much cheaper a replacement must be: ``fraction`` of the candidates' price per hour and at
    least ``per_hour``, so a replace never churns nodes for pennies; an underutilized command (delete or
    replace) must also save ``pool_fraction`` of the price of the pools it takes nodes from, since each
    one risks a node for the pods kube-scheduler leaves without room (about 1-2% of the pool per command
    on the live bench, issue 14); and when a whole pool is worth no more consolidation: once it costs at
    most ``settled_within`` more than its pods planned from empty (``settled.py``)."""

    fraction: float = 0.05
    per_hour: float = 0.0
    settled_within: float = 0.03
    pool_fraction: float = 0.02

    def worth_it(self, saving: float, pool_price: float) -> bool:
        """Whether a consolidation command's ``saving`` is enough for pools that cost ``pool_price``."""
        return saving >= self.pool_fraction * pool_price - 1e-9

    def enough(self, old: float, new: float) -> bool:
        saving = old - new
        return saving > 0 and saving >= max(self.fraction * old, self.per_hour)


@dataclass(frozen=True)
class Decision:
    """Remove ``candidates``; launch ``replacements`` first when there are any."""

    kind: str
    candidates: tuple[Candidate, ...]
    replacements: tuple[PlannedNodeClaim, ...]
    snapshot: Snapshot
    """The snapshot the replacements were planned on (their requests are its pods')."""

    @property
    def old_price(self) -> float:
        return round(sum(c.price for c in self.candidates), 6)

    @property
    def new_price(self) -> float:
        return round(sum(r.price_per_hour for r in self.replacements), 6)

    @property
    def saving(self) -> float:
        return round(self.old_price - self.new_price, 6)


def without(snapshot: Snapshot, removed: Mapping[str, Iterable[str]]) -> Snapshot:
    """``snapshot`` without the nodes in ``removed`` (node name to the keys of the pods a drain moves):
    those pods become pending, and the nodes stop counting against their pools' limits."""
    moved: list[Pod] = []
    kept: list[Node] = []
    freed: dict[str, dict[str, int]] = {}
    flavors = {it.name: it for it in snapshot.instance_types}
    for node in snapshot.nodes:
        if node.name not in removed:
            kept.append(node)
            continue
        keys = set(removed[node.name])
        moved += [pod for pod in node.pods if pod.key in keys]
        flavor = flavors.get(node.labels.get(INSTANCE_TYPE, ""))
        if node.node_pool is not None:
            total = freed.setdefault(node.node_pool, {})
            for name, amount in {**(flavor.capacity if flavor else node.allocatable), NODES: 1000}.items():
                total[name] = total.get(name, 0) + amount
    pools = tuple(
        replace(
            pool,
            usage={
                name: max(0, amount - freed.get(pool.name, {}).get(name, 0))
                for name, amount in pool.usage.items()
            },
        )
        for pool in snapshot.node_pools
    )
    return replace(snapshot, pods=(*snapshot.pods, *moved), nodes=tuple(kept), node_pools=pools)


def evaluate(
    snapshot: Snapshot,
    candidates: Sequence[Candidate],
    leaving: Mapping[str, Iterable[str]],
    solve: Solve,
    min_saving: MinSaving,
    *,
    require_saving: bool = True,
) -> Decision | None:
    """Remove ``candidates`` (with the nodes in ``leaving`` gone too): delete when their pods fit
    elsewhere, replace when the new nodes are cheaper enough; None when neither holds.

    ``require_saving=False`` (drift) accepts any replacement that places every moved pod."""
    removed = {**leaving, **{c.node: c.pods for c in candidates}}
    simulated = without(snapshot, removed)
    plan = solve(simulated)
    moving = {key for c in candidates for key in c.pods}
    if any(key in moving for key in plan.unschedulable):
        return None
    replacements = tuple(claim for claim in plan.node_claims if moving.intersection(claim.pods))
    if not replacements:
        return Decision(DELETE, tuple(candidates), (), simulated)
    if require_saving:
        # kube-scheduler places the evicted pods by its own scoring, not where this plan did: when the
        # replacements count on room left on other nodes, the pods it spreads there take that room and
        # the others find none (the provisioner then launched nodes that ate the saving after most
        # commands of the live bench, issue 14). So a replace must hold every moved pod on its own.
        simulated = closed_to_moved(simulated)
        plan = solve(simulated)
        if any(key in moving for key in plan.unschedulable):
            return None
        replacements = tuple(claim for claim in plan.node_claims if moving.intersection(claim.pods))
    decision = Decision(REPLACE, tuple(candidates), replacements, simulated)
    if require_saving and not min_saving.enough(decision.old_price, decision.new_price):
        return None
    if require_saving and same_flavors(decision):
        return None  # the same nodes again (another zone's price at most): churn without a fleet change
    return decision


def closed_to_moved(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with every node cordoned: its pending pods (the moved ones) can only go to new
    nodes, while the pods already on the nodes still count for spread and affinity."""
    return replace(snapshot, nodes=tuple(replace(node, unschedulable=True) for node in snapshot.nodes))


def same_flavors(decision: Decision) -> bool:
    """Whether a replace would launch exactly the flavors it removes (M -> M of the same flavors)."""
    removed = sorted(c.instance_type for c in decision.candidates)
    return removed == sorted(r.instance_type for r in decision.replacements)


def _orders(candidates: Sequence[Candidate], budget: Mapping[str, int] | None) -> list[list[Candidate]]:
    """Several ways to line candidates up, each a reasonable guess at which go together: fewest pods
    first (Karpenter's disruption cost), most expensive first, oldest first. With ``budget`` (pool to
    nodes it may lose), each order keeps only as many of a pool's candidates as its budget allows."""
    by_pods = sorted(candidates, key=lambda c: (len(c.pods), -c.price, c.claim))
    by_price = sorted(candidates, key=lambda c: (-c.price, len(c.pods), c.claim))
    by_age = sorted(candidates, key=lambda c: (c.created, c.claim))
    orders: list[list[Candidate]] = []
    for order in (by_pods, by_price, by_age):
        if budget is not None:
            order = _within_budget(order, budget)
        if order not in orders:
            orders.append(order)
    return orders


def _within_budget(order: Sequence[Candidate], budget: Mapping[str, int]) -> list[Candidate]:
    taken: dict[str, int] = {}
    kept = []
    for c in order:
        if taken.get(c.pool, 0) < budget.get(c.pool, 0):
            kept.append(c)
            taken[c.pool] = taken.get(c.pool, 0) + 1
    return kept


def _better(a: Decision | None, b: Decision | None) -> Decision | None:
    if a is None:
        return b
    if b is None:
        return a
    return b if _score(b) > _score(a) else a


def _score(decision: Decision) -> tuple[float, bool, int, int]:
    """The larger saving wins; at the same saving, fewer new nodes, then fewer nodes disrupted: churn
    costs something the price does not show."""
    return (
        decision.saving,
        decision.kind == DELETE,
        -len(decision.replacements),
        -len(decision.candidates),
    )


def multi_node(
    snapshot: Snapshot,
    candidates: Sequence[Candidate],
    leaving: Mapping[str, Iterable[str]],
    solve: Solve,
    min_saving: MinSaving,
    *,
    limit: int = 100,
    budget: Mapping[str, int] | None = None,
    deadline: float | None = None,
) -> Decision | None:
    """The best set of two or more candidates to remove together: in each order, a binary search for the
    longest prefix that consolidates (Karpenter's search), kept if it saves the most."""
    best: Decision | None = None
    for order in _orders(candidates, budget):
        order = order[:limit]
        # Twice: the longest prefix that consolidates at all, and the longest that needs no new node
        # (a shorter delete often saves as much as a longer replace, with less churn).
        for deletes_only in (False, True):
            low, high = 2, len(order)
            while low <= high:
                if deadline is not None and time.monotonic() > deadline:
                    return best
                middle = (low + high) // 2
                found = evaluate(snapshot, order[:middle], leaving, solve, min_saving)
                if found is not None and (found.kind == DELETE or not deletes_only):
                    best = _better(best, found)
                    low = middle + 1
                else:
                    high = middle - 1
    return best


def single_node(
    snapshot: Snapshot,
    candidates: Sequence[Candidate],
    leaving: Mapping[str, Iterable[str]],
    solve: Solve,
    min_saving: MinSaving,
    *,
    deadline: float | None = None,
) -> Decision | None:
    """The one candidate whose removal saves the most (Karpenter takes the first that saves anything).

    Removing a node saves at most its price, and candidates come dearest first: once a saving beats the
    next candidate's price outright, no later candidate can win, so the search stops there."""
    best: Decision | None = None
    for one in sorted(candidates, key=lambda c: (-c.price, len(c.pods), c.claim)):
        if deadline is not None and time.monotonic() > deadline:
            break
        if best is not None and best.saving > one.price:
            break
        best = _better(best, evaluate(snapshot, [one], leaving, solve, min_saving))
    return best


def still_valid(before: Decision, after: Decision | None) -> bool:
    """Whether a decision re-computed after the validation delay still stands: same kind, and a
    replacement no dearer than the one first decided on."""
    if after is None or after.kind != before.kind:
        return False
    return after.new_price <= before.new_price + 1e-9
