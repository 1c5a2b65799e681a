"""Amounts at the edge of int64 and integers a label can hold: both engines decide exactly as exact
arithmetic does (Rust's i64 must not wrap, its integer parsing must match Python's)."""

from __future__ import annotations

from dataclasses import replace

from builders import GI, make_flavor, make_node, make_pod, snapshot
from kapstan.scheduling import solve
from kapstan.scheduling.model import MEMORY, NodeSelectorRequirement, parse_int64
from kapstan.scheduling.validator import validate

INT64_MAX = 2**63 - 1


def test_a_request_that_would_overflow_a_nodes_load_does_not_fit_it(engine: str) -> None:
    flavor = make_flavor("big", 16, 64 * GI)
    node = make_node("existing", flavor, pods=(make_pod("running", 1, GI),))
    small = make_pod("huge", 1)
    huge = replace(small, requests={**small.requests, MEMORY: INT64_MAX})
    snap = snapshot([huge], flavors=(flavor,), nodes=(node,))
    plan = solve(snap, engine)
    assert plan.existing_nodes.get("existing", ()) == ()
    assert "default/huge" in plan.unschedulable
    assert validate(snap, plan) == []


def test_gt_compares_label_values_as_kubernetes_reads_integers(engine: str) -> None:
    """A label of 45 digits, `+-5` or ` 7` is no integer to kube-scheduler (ParseInt, 64 bits)."""
    requirement = NodeSelectorRequirement("example.com/generation", "Gt", ("5",))
    flavors = tuple(
        make_flavor(f"f{i}", 2, 4 * GI, labels={"example.com/generation": value})
        for i, value in enumerate(["9" * 45, "+-7", " 7", "7_0"])
    )
    pod = make_pod("picky", 1, required_terms=((requirement,),))
    plan = solve(snapshot([pod], flavors=flavors), engine)
    assert plan.node_claims == ()
    assert "default/picky" in plan.unschedulable


def test_parse_int64_is_go_parse_int() -> None:
    assert parse_int64("+5") == 5 and parse_int64("-5") == -5
    assert parse_int64(str(INT64_MAX)) == INT64_MAX and parse_int64(str(-INT64_MAX - 1)) == -INT64_MAX - 1
    for text in ("+-5", "9" * 45, str(INT64_MAX + 1), " 5", "5_0", "\u0665", "", "0x10"):
        assert parse_int64(text) is None, text
