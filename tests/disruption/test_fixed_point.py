"""Consolidation that reaches a fixed point (issue 14): no command while the pool's pending pods need a
new node (Karpenter's rule), and none in a pool that already costs little more than its pods planned
from empty, whatever a subset of its nodes would save; and replacements that hold their pods without
counting on room elsewhere; on both engines."""

from __future__ import annotations

from dataclasses import replace

from test_consolidation import C2, C4, C8, GB, _candidate, _half_used, _node, _solver
from test_methods import _observed

from builders import make_nodepool, make_pod, snapshot
from kapstan.controllers.disruption.consolidation import REPLACE, MinSaving, evaluate
from kapstan.controllers.disruption.methods import choose, recheck
from kapstan.controllers.disruption.settled import from_empty_price, settled_pools


def test_pods_pending_for_a_new_node_halt_consolidation_and_its_recheck(engine: str) -> None:
    snap, candidates = _half_used()  # four c3-8 with 2.5 CPU free each
    reason, decision = choose(_observed(candidates, snap), _solver(engine), MinSaving(), 10.0) or ("", None)
    assert decision is not None
    waiting = replace(snap, pods=(make_pod("batch-0", 3.5, GB),))  # fits no existing node: a new c3-8
    seen = _observed(candidates, waiting)
    assert choose(seen, _solver(engine), MinSaving(), 10.0) is None
    assert recheck(seen, reason, decision, _solver(engine), MinSaving()) == (
        f"{decision.candidates[0].claim}: 1 pods pending for provisioning (default/batch-0)"
    ), "a decision taken before the pods arrived does not go ahead"


def test_pending_pods_that_fit_existing_nodes_or_no_flavor_halt_nothing(engine: str) -> None:
    snap, candidates = _half_used()
    for pod in (make_pod("tiny-0", 0.5, GB), make_pod("huge-0", 64, GB)):
        seen = _observed(candidates, replace(snap, pods=(pod,)))
        assert choose(seen, _solver(engine), MinSaving(), 10.0) is not None, pod.name


def _nearly_packed(full_nodes: int = 20) -> tuple:
    """Twenty full c3-8 (two pods of 1.9 CPU each) and one c3-8 holding a single 1.5-CPU pod: the pool
    costs 4.2/h; from empty its pods take the twenty c3-8 and one c3-4, 4.1/h (2.4% less)."""
    full = [
        _node(f"f{i}", C4, make_pod(f"big-{i}-a", 1.9, GB), make_pod(f"big-{i}-b", 1.9, GB))
        for i in range(full_nodes)
    ]
    odd = _node("odd", C4, make_pod("small-0", 1.5, GB))
    snap = snapshot([], (C2, C4, C8), (make_nodepool("pool"),), nodes=(*full, odd))
    return snap, [_candidate(n, 0.2) for n in (*full, odd)]


def test_the_pools_pods_planned_from_empty_price_its_fixed_point(engine: str) -> None:
    snap, candidates = _nearly_packed()
    assert from_empty_price(snap, candidates, {}, _solver(engine)) == 4.1
    assert settled_pools(snap, candidates, ["pool"], {}, _solver(engine), 0.03) == {
        "pool": "settled: its nodes cost 4.2/h, its pods planned from empty 4.1/h (within 3%)"
    }
    assert settled_pools(snap, candidates, ["pool"], {}, _solver(engine), 0.02) == {}


def test_a_settled_pool_gets_no_replace_that_only_a_subset_would_justify(engine: str) -> None:
    snap, candidates = _nearly_packed()
    # The odd node alone: c3-8 -> c3-4 saves 0.1/h, half its price, far over the 5% per command.
    unsettled = MinSaving(settled_within=0.0)
    found = choose(_observed(candidates, snap), _solver(engine), unsettled, 10.0)
    assert found is not None and found[1].kind == REPLACE and found[1].saving >= 0.1
    assert choose(_observed(candidates, snap), _solver(engine), MinSaving(), 10.0) is None


def test_a_replace_holds_every_moved_pod_itself_rather_than_counting_on_room_elsewhere(engine: str) -> None:
    big = _node("big", C8, *(make_pod(f"batch-{i}", 2, GB) for i in range(3)))
    other = _node("other", C4, make_pod("web-0", 1, GB))  # 3 CPU free, not a candidate
    snap = snapshot([], (C4, C8), (make_nodepool("pool"),), nodes=(big, other))
    decision = evaluate(snap, [_candidate(big, 0.5)], {}, _solver(engine), MinSaving())
    # Counting on the other node's room, one c3-8 (0.2/h) would do; kube-scheduler may fill that room
    # with other pods first, so the replacement takes all three pods: two c3-8, 0.4/h.
    assert decision is not None and decision.kind == REPLACE
    assert [r.instance_type for r in decision.replacements] == ["c3-8", "c3-8"]
    assert decision.new_price == 0.4
    assert sorted(key for r in decision.replacements for key in r.pods) == [
        "default/batch-0",
        "default/batch-1",
        "default/batch-2",
    ]


def test_a_command_must_save_a_share_of_its_pools_price(engine: str) -> None:
    # Forty full c3-8 and the odd one: 8.2/h; replacing the odd c3-8 by a c3-4 saves 0.1/h, half of
    # the candidate's price but 1.2% of the pool's, less than a node for stranded pods costs.
    snap, candidates = _nearly_packed(40)
    not_settled = MinSaving(settled_within=0.0)
    assert choose(_observed(candidates, snap), _solver(engine), not_settled, 10.0) is None
    any_share = MinSaving(settled_within=0.0, pool_fraction=0.0)
    found = choose(_observed(candidates, snap), _solver(engine), any_share, 10.0)
    assert found is not None and found[1].saving == 0.1
    assert recheck(_observed(candidates, snap), found[0], found[1], _solver(engine), not_settled) == (
        "re-planned, it saves 0.1/h, less than 0.02 of its pools' price"
    )
