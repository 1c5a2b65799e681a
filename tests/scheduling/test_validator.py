"""The validator catches broken plans: each test breaks one rule of an otherwise valid plan."""

from __future__ import annotations

from dataclasses import replace

from builders import article_flavors, make_nodepool, make_pod, snapshot
from kapstan.scheduling import python_engine
from kapstan.scheduling.model import (
    HOSTNAME,
    ZONE,
    LabelSelector,
    Plan,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate

APP = LabelSelector(match_labels=(("app", "web"),))


def merged_onto_first(plan: Plan) -> Plan:
    first = plan.node_claims[0]
    pods = tuple(key for claim in plan.node_claims for key in claim.pods)
    return replace(plan, node_claims=(replace(first, pods=pods),))


def test_over_committed_node() -> None:
    snap = snapshot([make_pod(f"p{i}", 1.5) for i in range(2)])
    plan = python_engine.solve(snap)
    assert validate(snap, plan) == []
    small = replace(
        plan,
        node_claims=tuple(
            replace(c, instance_type="c3-4", price_per_hour=c.price_per_hour) for c in plan.node_claims
        ),
    )
    assert any("over-committed" in v or "price" in v for v in validate(snap, merged_onto_first(small)))


def test_anti_affinity_broken() -> None:
    anti = (PodAffinityTerm(APP, HOSTNAME, ("default",)),)
    snap = snapshot([make_pod(f"w{i}", 0.2, labels={"app": "web"}, anti_affinity=anti) for i in range(2)])
    plan = python_engine.solve(snap)
    assert len(plan.node_claims) == 2
    assert any("anti-affinity" in v for v in validate(snap, merged_onto_first(plan)))


def test_spread_broken() -> None:
    flavors = tuple(
        replace(f, offerings=(*f.offerings, replace(f.offerings[0], zone="other"))) for f in article_flavors()
    )
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)
    snap = snapshot(
        [make_pod(f"w{i}", 0.2, labels={"app": "web"}, spread=spread) for i in range(2)], flavors=flavors
    )
    plan = python_engine.solve(snap)
    assert sorted(c.zone for c in plan.node_claims) == ["nova", "other"]
    same_zone = replace(
        plan,
        node_claims=tuple(
            replace(c, zone="nova", labels={**c.labels, ZONE: "nova"}) for c in plan.node_claims
        ),
    )
    assert any("topology spread" in v for v in validate(snap, same_zone))


def test_limits_wrong_price_and_lost_pods() -> None:
    snap = snapshot([make_pod(f"p{i}", 1) for i in range(3)], pools=(make_nodepool(limits={"cpu": 2000}),))
    plan = python_engine.solve(snap)
    assert validate(snap, plan) == []
    assert len(plan.unschedulable) == 3 - sum(len(c.pods) for c in plan.node_claims)
    doubled = replace(plan, node_claims=plan.node_claims * 2)
    problems = validate(snap, doubled)
    assert any("limit cpu exceeded" in v for v in problems)
    assert any("placed 2 times" in v for v in problems)
    cheap = replace(plan, node_claims=tuple(replace(c, price_per_hour=0.0) for c in plan.node_claims))
    assert any("price" in v for v in validate(snap, cheap))
    lost = replace(plan, unschedulable={})
    assert any("neither placed nor reported" in v for v in validate(snap, lost))
