"""Karpenter's order of methods over one observation: emptiness, drift, multi-node, single-node; the
pool's policy, the budgets and the blocks decide what each may take."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from test_consolidation import C4, C8, GB, _candidate, _half_used, _node, _solver

from builders import make_nodepool, make_pod, snapshot
from kapstan.api.karpenter import Budget
from kapstan.controllers.disruption.consolidation import DELETE, REPLACE, MinSaving
from kapstan.controllers.disruption.methods import (
    DRIFTED,
    EMPTY,
    UNDERUTILIZED,
    Observed,
    blocked_by_budgets,
    choose,
    recheck,
)

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def _observed(candidates: list, snap: Any, **fields: Any) -> Observed:
    base: dict[str, Any] = {
        "candidates": tuple(candidates),
        "drifted": {},
        "leaving": {},
        "policies": {"pool": "WhenEmptyOrUnderutilized"},
        "budgets": {"pool": [Budget(nodes="100%")]},
        "totals": {"pool": len(candidates)},
        "disrupting": {},
        "snapshot": snap,
        "now": NOW,
    }
    return Observed(**{**base, **fields})


def test_empty_nodes_go_first_all_at_once_within_the_budget(engine: str) -> None:
    snap, candidates = _half_used()
    empty = [replace(c, claim=f"empty-{i}", pods=()) for i, c in enumerate(candidates[:3])]
    seen = _observed([*empty, candidates[3]], snap, budgets={"pool": [Budget(nodes="2")]})
    reason, decision = choose(seen, _solver(engine), MinSaving(), 10.0) or (None, None)
    assert reason == EMPTY and decision is not None and decision.kind == DELETE
    assert [c.claim for c in decision.candidates] == ["empty-0", "empty-1"]


def test_drift_comes_before_consolidation_and_needs_no_saving(engine: str) -> None:
    snap, candidates = _half_used()
    seen = _observed(candidates, snap, drifted={candidates[2].claim: "NodePoolDrifted"})
    found = choose(seen, _solver(engine), MinSaving(), 10.0)
    assert found is not None and found[0] == DRIFTED
    assert [c.claim for c in found[1].candidates] == [candidates[2].claim]


def test_underutilized_nodes_consolidate_only_in_a_when_empty_or_underutilized_pool(engine: str) -> None:
    snap, candidates = _half_used()
    found = choose(_observed(candidates, snap), _solver(engine), MinSaving(), 10.0)
    assert found is not None and found[0] == UNDERUTILIZED and len(found[1].candidates) == 2
    when_empty = _observed(candidates, snap, policies={"pool": "WhenEmpty"})
    assert choose(when_empty, _solver(engine), MinSaving(), 10.0) is None


def test_the_default_budget_takes_one_of_four_and_blocked_nodes_are_never_chosen(engine: str) -> None:
    snap, candidates = _half_used()
    found = choose(
        _observed(candidates, snap, budgets={"pool": [Budget()]}), _solver(engine), MinSaving(), 10.0
    )
    assert found is not None and len(found[1].candidates) == 1  # 10% of 4, rounded up
    blocked = [
        replace(c, blocked="pod default/web-0 is annotated karpenter.sh/do-not-disrupt") for c in candidates
    ]
    assert choose(_observed(blocked, snap), _solver(engine), MinSaving(), 10.0) is None
    zero = _observed(candidates, snap, budgets={"pool": [Budget(nodes="0")]})
    assert choose(zero, _solver(engine), MinSaving(), 10.0) is None


def test_a_budget_that_blocks_a_reason_some_node_would_go_for_is_reported() -> None:
    snap, candidates = _half_used()
    empty = replace(candidates[0], claim="empty", pods=())
    drifted = {candidates[1].claim: "NodePoolDrifted"}
    nodes = [empty, *candidates[1:]]
    # 0 nodes for Empty and Drifted, any for Underutilized: both blocked reasons, the open one not.
    budgets = [Budget(nodes="0", reasons=("Empty", "Drifted")), Budget(nodes="100%")]
    seen = _observed(nodes, snap, budgets={"pool": budgets}, drifted=drifted)
    assert blocked_by_budgets(seen) == {"pool": [DRIFTED, EMPTY]}
    # No budget of 0: nothing to report; and a quiet pool (nothing to disrupt) is never reported.
    assert blocked_by_budgets(_observed(nodes, snap, drifted=drifted)) == {}
    quiet = [replace(c, consolidatable=False) for c in candidates]
    assert blocked_by_budgets(_observed(quiet, snap, budgets={"pool": [Budget(nodes="0")]})) == {}
    # Underutilized counts only where the policy consolidates underutilized nodes.
    everything = _observed(candidates, snap, budgets={"pool": [Budget(nodes="0")]})
    assert blocked_by_budgets(everything) == {"pool": [UNDERUTILIZED]}
    assert blocked_by_budgets(replace(everything, policies={"pool": "WhenEmpty"})) == {}


def test_recheck_keeps_a_decision_that_still_holds_and_drops_one_that_does_not(engine: str) -> None:
    snap, candidates = _half_used()
    seen = _observed(candidates, snap)
    found = choose(seen, _solver(engine), MinSaving(), 10.0)
    assert found is not None
    reason, decision = found
    assert recheck(seen, reason, decision, _solver(engine), MinSaving()) == (reason, decision)
    first = decision.candidates[0].claim
    held = [replace(c, blocked="PodDisruptionBudget default/web allows no eviction") for c in candidates]
    assert recheck(_observed(held, snap), reason, decision, _solver(engine), MinSaving()) == (
        f"{first}: PodDisruptionBudget default/web allows no eviction"
    )
    busy = [replace(c, consolidatable=False) for c in candidates]
    assert recheck(_observed(busy, snap), reason, decision, _solver(engine), MinSaving()) == (
        f"{first} is no longer consolidatable (a pod came or went within consolidateAfter)"
    )
    gone = [c for c in candidates if c.claim != first]
    assert recheck(_observed(gone, snap), reason, decision, _solver(engine), MinSaving()) == (
        f"{first} is no longer a candidate"
    )
    tight = _observed(candidates, snap, budgets={"pool": [Budget(nodes="1")]})
    taken = len(decision.candidates)
    assert taken > 1
    assert recheck(tight, reason, decision, _solver(engine), MinSaving()) == (
        f"the budgets of pool allow 1 nodes for {reason}, the command takes {taken}"
    )


def test_a_large_node_is_replaced_m_to_n(engine: str) -> None:
    big = _node("big", C8, make_pod("a", 3, GB), make_pod("b", 3, GB))
    snap = snapshot([], (C4, C8), (make_nodepool("pool"),), nodes=(big,))
    found = choose(_observed([_candidate(big, 0.5)], snap), _solver(engine), MinSaving(), 10.0)
    assert found is not None and found[0] == UNDERUTILIZED and found[1].kind == REPLACE
    assert len(found[1].replacements) == 2


def test_a_pool_that_is_still_provisioning_is_left_alone(engine: str) -> None:
    snap, candidates = _half_used()
    empty = [replace(candidates[0], claim="empty", pods=()), *candidates[1:]]
    growing = {"pool": "NodeClaim pool-x is not Initialized yet"}
    assert choose(_observed(empty, snap), _solver(engine), MinSaving(), 10.0) is not None
    assert choose(_observed(empty, snap, provisioning=growing), _solver(engine), MinSaving(), 10.0) is None
    reason, decision = choose(_observed(candidates, snap), _solver(engine), MinSaving(), 10.0) or ("", None)
    assert decision is not None
    again = recheck(
        _observed(candidates, snap, provisioning=growing), reason, decision, _solver(engine), MinSaving()
    )
    assert again == f"{decision.candidates[0].claim}: NodeClaim pool-x is not Initialized yet", (
        "a decision taken before the pool started growing again does not go ahead"
    )


def test_a_replace_by_the_same_flavors_is_refused_whatever_it_saves(engine: str) -> None:
    # One c3-8 whose claim was priced at 0.5/h when the flavor now costs 0.2/h: replacing it by another
    # c3-8 "saves" 0.3/h on paper and changes nothing in the fleet.
    node = _node("n0", C4, make_pod("web-0", 3, GB))
    snap = snapshot([], (C4, C8), (make_nodepool("pool"),), nodes=(node,))
    assert choose(_observed([_candidate(node, 0.5)], snap), _solver(engine), MinSaving(), 10.0) is None


def test_a_pool_whose_nodes_are_too_unhealthy_is_left_alone(engine: str) -> None:
    snap, candidates = _half_used()
    sick = {
        "pool": "2 of 4 Nodes not Ready (n0, n1), more than 20%: consolidation, drift and expiration halted"
    }
    drifted = {candidates[2].claim: "NodePoolDrifted"}
    assert (
        choose(_observed(candidates, snap, drifted=drifted), _solver(engine), MinSaving(), 10.0) is not None
    )
    halted = _observed(candidates, snap, drifted=drifted, unhealthy=sick)
    assert choose(halted, _solver(engine), MinSaving(), 10.0) is None
    reason, decision = choose(_observed(candidates, snap), _solver(engine), MinSaving(), 10.0) or ("", None)
    assert decision is not None
    assert recheck(halted, reason, decision, _solver(engine), MinSaving()) == (
        f"{decision.candidates[0].claim}: {sick['pool']}"
    )
