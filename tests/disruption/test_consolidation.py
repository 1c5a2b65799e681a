"""Consolidation through the solver: delete when the pods fit elsewhere, replace M → N when cheaper
enough, nothing when the saving is too small or a pod would have nowhere to go."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from builders import make_flavor, make_node, make_nodepool, make_pod, snapshot
from kapstan import scheduling
from kapstan.controllers.disruption.candidates import Candidate
from kapstan.controllers.disruption.consolidation import (
    DELETE,
    REPLACE,
    MinSaving,
    evaluate,
    multi_node,
    single_node,
    without,
)
from kapstan.scheduling.model import CPU, NODEPOOL, Node, Plan, Snapshot

GB = 10**9
C4 = make_flavor("c3-8", 4, 8 * GB, price=0.2, zones=("nova",))
C8 = make_flavor("c3-16", 8, 16 * GB, price=0.5, zones=("nova",))
C2 = make_flavor("c3-4", 2, 4 * GB, price=0.1, zones=("nova",))
CREATED = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def _node(name: str, flavor: object, *pods: object) -> Node:
    made = make_node(name, flavor, zone="nova", pods=tuple(pods), node_pool="pool")  # type: ignore[arg-type]
    return Node(
        made.name, {**made.labels, NODEPOOL: "pool"}, made.allocatable, pods=made.pods, node_pool="pool"
    )


def _candidate(node: Node, price: float) -> Candidate:
    return Candidate(
        claim=f"claim-{node.name}",
        node=node.name,
        pool="pool",
        instance_type=node.labels["node.kubernetes.io/instance-type"],
        zone="nova",
        price=price,
        pods=tuple(p.key for p in node.pods),
        created=CREATED,
        consolidatable=True,
    )


def _solver(engine: str) -> Callable[[Snapshot], Plan]:
    return partial(scheduling.solve, engine=engine)


def _half_used(flavors: tuple = (C4,)) -> tuple[Snapshot, list[Candidate]]:
    nodes = [_node(f"n{i}", C4, make_pod(f"web-{i}", 1.5, 256 * 2**20)) for i in range(4)]
    snap = snapshot(
        [], flavors, (make_nodepool("pool", usage={CPU: 16000, "nodes": 4000}),), nodes=tuple(nodes)
    )
    return snap, [_candidate(n, 0.2) for n in nodes]


def test_without_makes_the_moved_pods_pending_and_frees_the_pool_usage() -> None:
    snap, _ = _half_used()
    gone = without(snap, {"n0": ("default/web-0",)})
    assert [p.key for p in gone.pods] == ["default/web-0"]
    assert [n.name for n in gone.nodes] == ["n1", "n2", "n3"]
    assert gone.node_pools[0].usage == {CPU: 12000, "nodes": 3000}


def test_a_half_used_node_whose_pod_fits_elsewhere_is_deleted(engine: str) -> None:
    snap, candidates = _half_used()
    decision = evaluate(snap, candidates[:1], {}, _solver(engine), MinSaving())
    assert decision is not None and decision.kind == DELETE
    assert decision.saving == 0.2


def test_multi_node_takes_as_many_as_fit_and_the_budget_caps_it(engine: str) -> None:
    snap, candidates = _half_used()
    decision = multi_node(snap, candidates, {}, _solver(engine), MinSaving())
    assert decision is not None and decision.kind == DELETE
    assert len(decision.candidates) == 2  # four pods of 1.5 CPU need two 4-CPU nodes
    capped = multi_node(snap, candidates, {}, _solver(engine), MinSaving(), budget={"pool": 1})
    assert capped is None  # a set of one is single-node consolidation's job
    single = single_node(snap, candidates, {}, _solver(engine), MinSaving())
    assert single is not None and len(single.candidates) == 1


def test_one_large_node_is_replaced_by_two_cheaper_small_ones(engine: str) -> None:
    big = _node("big", C8, make_pod("a", 3, GB), make_pod("b", 3, GB))
    snap = snapshot([], (C4, C8), (make_nodepool("pool"),), nodes=(big,))
    decision = single_node(snap, [_candidate(big, 0.5)], {}, _solver(engine), MinSaving())
    assert decision is not None and decision.kind == REPLACE
    assert sorted(r.instance_type for r in decision.replacements) == ["c3-8", "c3-8"]
    assert (decision.old_price, decision.new_price, decision.saving) == (0.5, 0.4, 0.1)


def test_single_node_stops_once_no_cheaper_candidate_can_save_more(engine: str) -> None:
    # The big node's pods fit on the two small ones: deleting it saves 0.5, more than either small
    # node costs, so they are not even tried; with equal prices the search goes on.
    big = _node("big", C8, make_pod("a", 1, GB))
    small = [_node(f"s{i}", C4, make_pod(f"p{i}", 1, GB)) for i in range(2)]
    snap = snapshot([], (C4, C8), (make_nodepool("pool"),), nodes=(big, *small))
    tried: list[list[str]] = []

    def counting(snapshot: Snapshot) -> Plan:
        tried.append(sorted(p.key for p in snapshot.pods))
        return scheduling.solve(snapshot, engine=engine)

    candidates = [_candidate(big, 0.5), *(_candidate(n, 0.2) for n in small)]
    decision = single_node(snap, candidates, {}, counting, MinSaving())
    assert decision is not None and [c.claim for c in decision.candidates] == ["claim-big"]
    assert decision.kind == DELETE and len(tried) == 1
    tried.clear()
    same = [_candidate(big, 0.2), *(_candidate(n, 0.2) for n in small)]
    single_node(snap, same, {}, counting, MinSaving())
    assert len(tried) == 3


def test_a_replacement_that_saves_less_than_the_minimum_is_refused(engine: str) -> None:
    big = _node("big", C8, make_pod("a", 3, GB), make_pod("b", 3, GB))
    snap = snapshot([], (C4, C8), (make_nodepool("pool"),), nodes=(big,))
    assert evaluate(snap, [_candidate(big, 0.41)], {}, _solver(engine), MinSaving(fraction=0.05)) is None
    assert (
        evaluate(snap, [_candidate(big, 0.5)], {}, _solver(engine), MinSaving(fraction=0.0, per_hour=0.2))
        is None
    )
    accepted = evaluate(snap, [_candidate(big, 0.41)], {}, _solver(engine), MinSaving(fraction=0.0))
    assert accepted is not None and accepted.saving == 0.01
    # Drift replaces without asking for a saving.
    same = evaluate(snap, [_candidate(big, 0.3)], {}, _solver(engine), MinSaving(), require_saving=False)
    assert same is not None and same.kind == REPLACE


def test_nothing_when_a_moved_pod_would_have_nowhere_to_go(engine: str) -> None:
    huge = _node("huge", C8, make_pod("giant", 7, GB))
    snap = snapshot([], (C2, C8), (make_nodepool("pool"),), nodes=(huge,))
    # Only another c3-16 holds the pod: same price, so no replace; and no node to delete into.
    assert evaluate(snap, [_candidate(huge, 0.5)], {}, _solver(engine), MinSaving()) is None
    cramped = snapshot([], (C2,), (make_nodepool("pool"),), nodes=(huge,))
    assert evaluate(cramped, [_candidate(huge, 0.5)], {}, _solver(engine), MinSaving()) is None


def test_pods_of_nodes_already_leaving_need_room_too(engine: str) -> None:
    snap, candidates = _half_used()
    # n1..n3 are leaving: n0's pod has nowhere to go but a new node, which is not cheaper.
    leaving = {n.node: n.pods for n in candidates[1:]}
    assert evaluate(snap, candidates[:1], leaving, _solver(engine), MinSaving()) is None


def test_a_replacement_is_the_cheapest_set_of_nodes_not_the_greedy_one(engine: str) -> None:
    # Issue 17's case as a consolidation: 25 pods of 2.5 CPU on three 32-CPU nodes of a flavor no longer
    # on sale. Greedy plus the cost pass would replace them by 3 A + 4 B (60.6/h); the exact pass finds
    # 7 A + 1 B (58.9/h).
    a = make_flavor("a", 8, 64 * GB, price=7.0, zones=("nova",))
    b = make_flavor("b", 12, 64 * GB, price=9.9, zones=("nova",))
    c = make_flavor("c", 32, 128 * GB, price=40.0, zones=("nova",))
    pods = [make_pod(f"web-{i}", 2.5) for i in range(25)]
    nodes = [
        _node(f"n{i}", c, *pods[start:end]) for i, (start, end) in enumerate(((0, 9), (9, 17), (17, 25)))
    ]
    snap = snapshot([], (a, b), (make_nodepool("pool"),), nodes=tuple(nodes))
    decision = evaluate(snap, [_candidate(n, 40.0) for n in nodes], {}, _solver(engine), MinSaving())
    assert decision is not None and decision.kind == REPLACE
    assert sorted(r.instance_type for r in decision.replacements) == ["a"] * 7 + ["b"]
    assert decision.new_price == 58.9
