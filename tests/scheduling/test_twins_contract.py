"""The twins' contract: the JSON the Python side sends is exactly what the Rust engine reads.

The Rust input structs deny unknown fields and default none, so a field added on one side only is an
error naming it. These tests keep that true: a snapshot with every field the solver reads set to
something other than its default goes through the Rust engine, and an extra or a missing field is
rejected with the field's name.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_args

import orjson
import pytest

from builders import make_daemonset, make_flavor, make_node, make_nodepool, make_pod, snapshot
from kapstan.scheduling import ENGINES
from kapstan.scheduling import model as m

pytestmark = pytest.mark.skipif("rust" not in ENGINES, reason="the Rust extension is not built")

if "rust" in ENGINES:
    from kapstan import _core
    from kapstan.scheduling.rust_engine import NOT_FOR_THE_SOLVER, encode

SELECTOR = m.LabelSelector(
    match_labels=(("app", "web"),), match_expressions=(m.LabelSelectorRequirement("tier", "In", ("a",)),)
)
TERM = m.PodAffinityTerm(SELECTOR, m.ZONE, ("default",), all_namespaces=True)
REQUIREMENT = m.NodeSelectorRequirement(m.ARCH, "In", ("amd64",), min_values=1)
TAINT = m.Taint("dedicated", "NoSchedule", "web")


def full_snapshot() -> m.Snapshot:
    """Every field of every model type the solver reads, set to something other than its default."""
    pod = make_pod(
        "web-0",
        labels={"app": "web", "tier": "a"},
        node_selector={m.ARCH: "amd64"},
        required_terms=((REQUIREMENT,),),
        preferred_terms=(m.PreferredNodeTerm(10, (REQUIREMENT,)),),
        affinity=(TERM,),
        preferred_affinity=(m.WeightedPodAffinityTerm(5, TERM),),
        anti_affinity=(TERM,),
        preferred_anti_affinity=(m.WeightedPodAffinityTerm(5, TERM),),
        tolerations=(m.Toleration("dedicated", "Exists", "web", "NoSchedule"),),
        spread=(m.TopologySpreadConstraint(1, m.ZONE, "ScheduleAnyway", SELECTOR, 2, "Ignore", "Honor"),),
        host_ports=(m.HostPort(8080, "UDP", "10.0.0.1"),),
    )
    flavor = make_flavor("big", 8, 32 << 30, taints=(TAINT,))
    flavor = dataclasses.replace(
        flavor, offerings=(m.Offering("zone-a", "spot", 1.5, available=False), *flavor.offerings)
    )
    pool = make_nodepool(
        requirements=(REQUIREMENT,),
        labels={"team": "web"},
        taints=(TAINT,),
        startup_taints=(TAINT,),
        weight=10,
        limits={m.CPU: 100_000},
        usage={m.CPU: 1000},
        instance_types=("big",),
    )
    bound = dataclasses.replace(pod, terminating=True)
    node = make_node(
        "n1",
        flavor,
        pods=(bound,),
        taints=(TAINT,),
        node_pool="default",
        unschedulable=True,
        refused=("default/web-1",),
    )
    return snapshot(
        [dataclasses.replace(pod, name="web-1")],
        (flavor,),
        (pool,),
        nodes=(node,),
        daemonsets=(make_daemonset("agent", 0.1, 1 << 20),),
        namespace_labels={"default": {"team": "web"}},
    )


def _fields_seen(obj: Any, seen: dict[str, bool]) -> None:
    """Per `Type.field` under `obj`, whether some instance holds a value other than the default."""
    if isinstance(obj, tuple | list):
        for item in obj:
            _fields_seen(item, seen)
        return
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        factory = field.default_factory
        default = factory() if factory is not dataclasses.MISSING else field.default
        name = f"{type(obj).__name__}.{field.name}"
        seen[name] = seen.get(name, False) or value != default
        _fields_seen(value, seen)


def test_the_full_snapshot_sets_every_field() -> None:
    """A field added to the model but not set here would escape the round trip below."""
    seen: dict[str, bool] = {}
    _fields_seen(full_snapshot(), seen)
    assert [name for name, was_set in seen.items() if not was_set] == []
    assert len(seen) > 60


def test_every_field_python_sends_is_one_rust_reads() -> None:
    sent = encode(full_snapshot())
    plan = orjson.loads(_core.solve_json(sent))
    assert set(plan) == {"node_claims", "existing_nodes", "unschedulable"}


def test_fields_only_the_controllers_use_are_not_sent() -> None:
    sent = orjson.loads(encode(full_snapshot()))
    assert "namespace_labels" not in sent
    assert "startup_taints" not in sent["node_pools"][0] and "node_pool" not in sent["nodes"][0]
    assert NOT_FOR_THE_SOLVER[m.Snapshot] == {"namespace_labels"}


def test_an_unknown_field_is_rejected_naming_it() -> None:
    sent = orjson.loads(encode(full_snapshot()))
    sent["pods"][0]["priority_class"] = "high"
    with pytest.raises(ValueError, match="invalid snapshot: unknown field `priority_class`"):
        _core.solve_json(orjson.dumps(sent))


def test_a_missing_field_is_rejected_naming_it() -> None:
    sent = orjson.loads(encode(full_snapshot()))
    del sent["node_pools"][0]["weight"]
    with pytest.raises(ValueError, match="invalid snapshot: missing field `weight`"):
        _core.solve_json(orjson.dumps(sent))


# The fields of each encoded object that carries an operator or an effect, to find those objects by.
NODE_REQUIREMENT = frozenset({"key", "operator", "values", "min_values"})
LABEL_REQUIREMENT = frozenset({"key", "operator", "values"})
TOLERATION = frozenset({"key", "operator", "value", "effect"})
TAINT_FIELDS = frozenset({"key", "effect", "value"})
CHOICES = [
    (NODE_REQUIREMENT, "operator", get_args(m.NodeOperator)),
    (LABEL_REQUIREMENT, "operator", get_args(m.LabelOperator)),
    (TOLERATION, "operator", get_args(m.TolerationOperator)),
    (TOLERATION, "effect", get_args(m.TolerationEffect)),
    (TAINT_FIELDS, "effect", get_args(m.TaintEffect)),
]


def _objects_with(document: Any, fields: frozenset[str]) -> list[dict[str, Any]]:
    """Every object in the encoded snapshot whose fields are exactly `fields`."""
    if isinstance(document, list):
        return [found for item in document for found in _objects_with(item, fields)]
    if not isinstance(document, dict):
        return []
    here = [document] if set(document) == fields else []
    return here + [found for value in document.values() for found in _objects_with(value, fields)]


@pytest.mark.parametrize(("fields", "name", "choices"), CHOICES)
def test_every_operator_and_effect_python_allows_is_one_rust_reads(
    fields: frozenset[str], name: str, choices: tuple[str, ...]
) -> None:
    sent = orjson.loads(encode(full_snapshot()))
    objects = _objects_with(sent, fields)
    assert objects
    for choice in choices:
        for obj in objects:
            obj[name] = choice
        plan = orjson.loads(_core.solve_json(orjson.dumps(sent)))
        assert set(plan) == {"node_claims", "existing_nodes", "unschedulable"}, choice


@pytest.mark.parametrize(("fields", "name"), [(fields, name) for fields, name, _ in CHOICES])
def test_an_unknown_operator_or_effect_is_rejected_naming_it(fields: frozenset[str], name: str) -> None:
    sent = orjson.loads(encode(full_snapshot()))
    _objects_with(sent, fields)[0][name] = "Sometimes"
    with pytest.raises(ValueError, match="invalid snapshot: unknown variant `Sometimes`"):
        _core.solve_json(orjson.dumps(sent))
