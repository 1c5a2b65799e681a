"""Which labels a new node carries, and so which pods kube-scheduler will bind to it (issue 12, items 1
and 2): flavor labels belong to the flavors that have them, template labels to their own NodePool, and a
key that only a NodePool's requirements define gets one allowed value, as Karpenter's
`NodeClaimTemplate.ToNodeClaim` resolves it (`scheduling/suite_test.go`, "Scheduling Logic" and
"Provider Specific Labels")."""

from __future__ import annotations

from dataclasses import replace

from builders import article_flavors, make_flavor, make_nodepool, make_pod, snapshot
from kapstan.scheduling import python_engine, solve
from kapstan.scheduling.model import NodeSelectorRequirement, Plan, PlannedNodeClaim, Snapshot
from kapstan.scheduling.requirements import Requirement, carried_value
from kapstan.scheduling.validator import validate

GPU_KEY = "example.com/gpu"
TEAM = "example.com/team"
GENERATION = "example.com/generation"


def req(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, operator, values)  # type: ignore[arg-type]


def plan_for(snap: Snapshot, engine: str) -> Plan:
    plan = solve(snap, engine)
    assert validate(snap, plan) == [], validate(snap, plan)
    return plan


def only_claim(plan: Plan) -> PlannedNodeClaim:
    assert len(plan.node_claims) == 1, (plan.node_claims, plan.unschedulable)
    return plan.node_claims[0]


def needing(*requirements: NodeSelectorRequirement) -> dict[str, object]:
    return {"required_terms": (tuple(requirements),)}


def test_exists_takes_the_flavor_that_has_the_label(engine: str) -> None:
    """suite_test.go "should schedule optional labels": only some instance types have the key."""
    flavors = (*article_flavors(), make_flavor("g1", 8, 16 * 10**9, price=50.0, labels={GPU_KEY: "t4"}))
    pod = make_pod("p", 1, **needing(req(GPU_KEY, "Exists")))
    claim = only_claim(plan_for(snapshot([pod], flavors=flavors), engine))
    assert claim.instance_type == "g1" and claim.labels[GPU_KEY] == "t4"


def test_exists_on_a_key_no_flavor_of_the_pool_has_is_refused(engine: str) -> None:
    """The GPU flavor is offered to another NodePool only: this pool's flavors lack the label."""
    flavors = (*article_flavors(), make_flavor("g1", 8, 16 * 10**9, price=50.0, labels={GPU_KEY: "t4"}))
    pools = (make_nodepool(instance_types=("c3-4", "c3-8", "c3-16")),)
    pod = make_pod("p", 1, **needing(req(GPU_KEY, "Exists")))
    plan = plan_for(snapshot([pod], flavors=flavors, pools=pools), engine)
    assert plan.node_claims == () and f"{GPU_KEY} Exists" in plan.unschedulable["default/p"]


def test_a_pool_requirement_on_a_key_no_flavor_defines_puts_one_allowed_value_on_the_node(
    engine: str,
) -> None:
    """suite_test.go "should schedule unconstrained pods that don't have matching node selectors": the
    node carries the NodePool requirement's value even when no pod asks for it."""
    pools = (make_nodepool(requirements=(req(TEAM, "In", "blue", "red"),)),)
    claim = only_claim(plan_for(snapshot([make_pod("p")], pools=pools), engine))
    assert claim.labels[TEAM] == "blue"


def test_pods_narrow_a_requirement_only_key_and_split_when_they_disagree(engine: str) -> None:
    """suite_test.go "should schedule compatible pods to the same node" and "should schedule incompatible
    pods to the different node"."""
    pools = (make_nodepool(requirements=(req(TEAM, "In", "blue", "red"),)),)
    same = [
        make_pod("red", **needing(req(TEAM, "In", "red"))),
        make_pod("not-blue", **needing(req(TEAM, "NotIn", "blue"))),
    ]
    claim = only_claim(plan_for(snapshot(same, pools=pools), engine))
    assert claim.labels[TEAM] == "red" and sorted(claim.pods) == ["default/not-blue", "default/red"]
    apart = [
        make_pod("red", **needing(req(TEAM, "In", "red"))),
        make_pod("blue", **needing(req(TEAM, "In", "blue"))),
    ]
    plan = plan_for(snapshot(apart, pools=pools), engine)
    assert sorted((c.labels[TEAM], c.pods) for c in plan.node_claims) == [
        ("blue", ("default/blue",)),
        ("red", ("default/red",)),
    ]


def test_exists_and_does_not_exist_on_a_requirement_only_key(engine: str) -> None:
    """suite_test.go "should schedule the pod with Exists operator and defined key" and "should not
    schedule the pod with DoesNotExists operator and defined key"."""
    pools = (make_nodepool(requirements=(req(TEAM, "In", "blue"),)),)
    pods = [
        make_pod("any", **needing(req(TEAM, "Exists"))),
        make_pod("none", **needing(req(TEAM, "DoesNotExist"))),
    ]
    plan = plan_for(snapshot(pods, pools=pools), engine)
    assert only_claim(plan).pods == ("default/any",) and only_claim(plan).labels[TEAM] == "blue"
    assert "default/none" in plan.unschedulable


def test_numeric_pool_requirements_give_the_node_an_integer_in_range(engine: str) -> None:
    """A NodePool requirement Gt on a key no flavor defines: the node carries an integer it allows, and a
    pod's own bound narrows it further."""
    pools = (make_nodepool(requirements=(req(GENERATION, "Gt", "5"),)),)
    claim = only_claim(plan_for(snapshot([make_pod("p")], pools=pools), engine))
    assert claim.labels[GENERATION] == "6"
    pod = make_pod("newer", **needing(req(GENERATION, "Gte", "9"), req(GENERATION, "Lt", "12")))
    claim = only_claim(plan_for(snapshot([pod], pools=pools), engine))
    assert claim.labels[GENERATION] == "9"


def test_a_pool_not_in_on_a_requirement_only_key_leaves_the_node_without_it_unless_a_pod_needs_it(
    engine: str,
) -> None:
    pools = (make_nodepool(requirements=(req(TEAM, "NotIn", "0", "1"),)),)
    claim = only_claim(plan_for(snapshot([make_pod("p")], pools=pools), engine))
    assert TEAM not in claim.labels
    claim = only_claim(
        plan_for(snapshot([make_pod("p", **needing(req(TEAM, "Exists")))], pools=pools), engine)
    )
    assert claim.labels[TEAM] == "2"


def test_carried_value_is_the_first_allowed_value() -> None:
    def of(*requirements: NodeSelectorRequirement) -> str | None:
        merged = Requirement.from_selector(requirements[0])
        for other in requirements[1:]:
            merged = merged.intersect(Requirement.from_selector(other))
        return carried_value(merged)

    assert of(req(TEAM, "In", "red", "blue")) == "blue"
    assert of(req(TEAM, "Exists")) == "0"
    assert of(req(TEAM, "NotIn", "0", "1"), req(TEAM, "Exists")) == "2"
    assert of(req(TEAM, "NotIn", "0")) is None
    assert of(req(TEAM, "DoesNotExist")) is None
    assert of(req(GENERATION, "Gt", "-3")) == "-2"
    assert of(req(GENERATION, "Lt", "-3")) == "-4"
    assert of(req(GENERATION, "Lte", "7"), req(GENERATION, "NotIn", "0")) == "1"
    assert of(req(GENERATION, "Gt", "2"), req(GENERATION, "Lt", "4"), req(GENERATION, "NotIn", "3")) is None


def test_the_validator_refuses_a_label_the_nodes_pool_and_flavor_do_not_give() -> None:
    pools = (make_nodepool("b", labels={"foo": "bar"}), make_nodepool("c", weight=50))
    snap = snapshot([make_pod("p")], pools=pools)
    plan = python_engine.solve(snap)
    claim = only_claim(plan)
    assert claim.node_pool == "c" and validate(snap, plan) == []
    leaked = replace(plan, node_claims=(replace(claim, labels={**claim.labels, "foo": "bar"}),))
    assert any("label foo=bar" in v for v in validate(snap, leaked))


def test_the_validator_refuses_a_requirement_only_label_on_a_flavor_key() -> None:
    """A label some flavors carry is theirs: a requirement cannot give it to a flavor that lacks it."""
    flavors = (*article_flavors(), make_flavor("g1", 8, 16 * 10**9, price=50.0, labels={GPU_KEY: "t4"}))
    pools = (make_nodepool(requirements=(req(GPU_KEY, "NotIn", "a100"),)),)
    snap = snapshot([make_pod("p")], flavors=flavors, pools=pools)
    plan = python_engine.solve(snap)
    claim = only_claim(plan)
    assert claim.instance_type == "c3-4" and validate(snap, plan) == []
    faked = replace(plan, node_claims=(replace(claim, labels={**claim.labels, GPU_KEY: "t4"}),))
    assert any(f"label {GPU_KEY}=t4" in v for v in validate(snap, faked))
