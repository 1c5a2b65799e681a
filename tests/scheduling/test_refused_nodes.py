"""A node that refused a pending pod (`Node.refused`, the provisioner's safety net for pods kube-scheduler
will not bind where a plan put them) has no room for that pod in either engine, and the validator refuses
a plan that puts it there; other pods still use the node."""

from __future__ import annotations

from builders import make_flavor, make_node, make_pod, snapshot
from kapstan.scheduling import solve
from kapstan.scheduling.model import Plan
from kapstan.scheduling.validator import validate

FLAVOR = make_flavor("m", 4, 8 * 2**30)


def test_a_refused_pod_goes_elsewhere_and_the_others_still_use_the_node(engine: str) -> None:
    node = make_node("roomy", FLAVOR, refused=("default/refused",))
    snap = snapshot([make_pod("refused", 1), make_pod("other", 1)], (FLAVOR,), nodes=(node,))
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    assert plan.existing_nodes["roomy"] == ("default/other",)
    assert [claim.pods for claim in plan.node_claims] == [("default/refused",)]


def test_the_validator_refuses_a_plan_that_puts_a_pod_where_it_was_refused() -> None:
    node = make_node("roomy", FLAVOR, refused=("default/refused",))
    snap = snapshot([make_pod("refused", 1)], (FLAVOR,), nodes=(node,))
    plan = Plan("python", node_claims=(), existing_nodes={"roomy": ("default/refused",)}, unschedulable={})
    assert validate(snap, plan) == [
        "kube-scheduler refused default/refused on node roomy but the plan places it there"
    ]
