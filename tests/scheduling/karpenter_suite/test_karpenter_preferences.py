"""Preferences held while they can be: Karpenter treats preferred node affinity, preferred pod
(anti-)affinity and ScheduleAnyway spreads as required first and relaxes them one at a time only when a pod
cannot be placed (`scheduling/preferences.go`, exercised by `scheduling/suite_test.go` "Preferential
Fallback" and `topology_test.go`); plus the pod-side numeric operators of kube-scheduler's NodeAffinity
filter (node_affinity_test.go "Gt"/"Lt")."""

from __future__ import annotations

import pytest
from karpenter_kit import (
    INTEGER,
    claim_of,
    new_node_labels,
    per_domain,
    placed,
    plan_for,
    pod,
    req,
    snap,
    spread,
    term,
    web,
)

from kapstan.scheduling.model import HOSTNAME, ZONE, LabelSelector, PodAffinityTerm, WeightedPodAffinityTerm

APART = (
    WeightedPodAffinityTerm(50, PodAffinityTerm(LabelSelector((("app", "web"),)), HOSTNAME, ("default",))),
)


def test_preferred_anti_affinity_holds_when_it_can(engine: str) -> None:
    """Karpenter topology_test.go: "should allow violation of preferred pod anti-affinity", the side where it
    can hold: two pods that prefer different nodes get two nodes (Karpenter tries it as required first)."""
    plan = plan_for(snap([web(f"w{i}", preferred_anti_affinity=APART) for i in range(2)]), engine)
    assert len(plan.node_claims) == 2


def test_preferred_affinity_holds_when_it_can(engine: str) -> None:
    """Karpenter topology_test.go: "should allow violation of preferred pod affinity", the side where it can
    hold: the follower prefers the target's node and gets it."""
    near = (
        WeightedPodAffinityTerm(
            50, PodAffinityTerm(LabelSelector((("role", "target"),)), HOSTNAME, ("default",))
        ),
    )
    target = pod("target", 1, labels={"role": "target"}, node_selector={ZONE: "test-zone-2"})
    follower = pod("follower", preferred_affinity=near)
    plan = plan_for(snap([target, follower]), engine)
    assert claim_of(plan, "default/target") == claim_of(plan, "default/follower")


def test_a_schedule_anyway_spread_holds_when_it_can(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should violate max-skew when unsat = schedule anyway
    (capacity type)", the side where it can hold: three pods with a ScheduleAnyway zone spread take the
    three zones."""
    snapshot = snap([web(f"w{i}", spread=(spread(when="ScheduleAnyway"),)) for i in range(3)])
    assert sorted(per_domain(snapshot, plan_for(snapshot, engine), ZONE).values()) == [1, 1, 1]


def test_a_schedule_anyway_spread_gives_way(engine: str) -> None:
    """Karpenter topology_test.go: "should violate max-skew when unsat = schedule anyway" (zone form): every
    pod requires zone 1; the soft zone spread is dropped and all five schedule there."""
    pods = [
        web(f"w{i}", spread=(spread(when="ScheduleAnyway"),), node_selector={ZONE: "test-zone-1"})
        for i in range(5)
    ]
    snapshot = snap(pods)
    assert per_domain(snapshot, plan_for(snapshot, engine), ZONE) == {"test-zone-1": 5}


@pytest.mark.parametrize(
    ("operator", "bound", "value"),
    [("Gt", "8", "16"), ("Lt", "4", "2"), ("Gte", "8", "16"), ("Lte", "2", "2")],
)
def test_numeric_pod_requirements(engine: str, operator: str, bound: str, value: str) -> None:
    """kube-scheduler node_affinity_test.go: "Pod with matchExpressions using Gt operator that matches the
    existing node" (and Lt); Karpenter's Gte/Lte on the pod side: the cheapest flavor in range (Gte 8 admits
    the GPU flavor, 8, and `large`, 16, which is the cheaper)."""
    p = pod("p", required_terms=(term(req(INTEGER, operator, bound)),))
    assert new_node_labels(plan_for(snap([p]), engine), "default/p")[INTEGER] == value


def test_a_numeric_requirement_no_flavor_meets(engine: str) -> None:
    """kube-scheduler node_affinity_test.go: "Pod with matchExpressions using Gt operator that does not match
    the existing node"."""
    p = pod("p", required_terms=(term(req(INTEGER, "Gt", "16")),))
    assert placed(plan_for(snap([p]), engine)) == set()
