"""DaemonSets on the nodes a plan counts on (issue 12 item 7): their host ports are held on every node
they run on, new or existing, and a flavor too small for the DaemonSets that must run on it is not
offered (Karpenter's scheduler.go daemon overhead and host-port usage, instance_selection_test.go)."""

from __future__ import annotations

from dataclasses import replace

from builders import MI, article_flavors, make_node, make_pod, snapshot
from kapstan.scheduling import python_engine, solve
from kapstan.scheduling.model import INSTANCE_TYPE, DaemonSet, HostPort, Plan, Snapshot
from kapstan.scheduling.validator import validate

PORT = (HostPort(8080),)


def agent(cpu_cores: float = 0.1, **fields: object) -> DaemonSet:
    return DaemonSet(
        "kube-system/agent", make_pod("agent", cpu_cores, 64 * MI, namespace="kube-system", **fields)
    )


def plan_for(snap: Snapshot, engine: str) -> Plan:
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    return plan


def test_a_host_port_every_new_node_holds_leaves_the_pod_pending(engine: str) -> None:
    snap = snapshot([make_pod("p", 1, host_ports=PORT)], daemonsets=(agent(host_ports=PORT),))
    plan = plan_for(snap, engine)
    assert plan.node_claims == ()
    assert "a DaemonSet holds its host port on every flavor" in plan.unschedulable["default/p"]


def test_a_host_port_held_on_one_flavor_moves_the_pod_to_another(engine: str) -> None:
    only_small = agent(host_ports=PORT, node_selector={INSTANCE_TYPE: "c3-4"})
    plan = plan_for(snapshot([make_pod("p", 1, host_ports=PORT)], daemonsets=(only_small,)), engine)
    assert [c.instance_type for c in plan.node_claims] == ["c3-8"]


def test_a_daemonset_holds_its_host_port_on_an_existing_node(engine: str) -> None:
    """The node's DaemonSet pod need not be in the snapshot (simulate's manifests rarely list it)."""
    old = make_node("old", article_flavors()[2])
    old = replace(old, labels={**old.labels, "role": "old"})
    on_old = agent(host_ports=PORT, node_selector={"role": "old"})
    snap = snapshot([make_pod("p", 1, host_ports=PORT)], nodes=(old,), daemonsets=(on_old,))
    plan = plan_for(snap, engine)
    assert plan.existing_nodes.get("old", ()) == ()
    assert [c.pods for c in plan.node_claims] == [("default/p",)]


def test_a_flavor_too_small_for_its_daemonsets_is_not_used(engine: str) -> None:
    # The pod asks no cpu, so only the DaemonSets' 3 CPU rule out the 2-CPU c3-4.
    snap = snapshot([make_pod("p", 0, 256 * MI)], daemonsets=(agent(3),))
    assert [c.instance_type for c in plan_for(snap, engine).node_claims] == ["c3-8"]


def test_a_pool_whose_flavors_are_all_too_small_for_its_daemonsets_says_so(engine: str) -> None:
    plan = plan_for(snapshot([make_pod("p", 0, 256 * MI)], daemonsets=(agent(20),)), engine)
    assert (
        plan.unschedulable["default/p"] == "NodePool default: its DaemonSets do not fit on c3-16, c3-4, c3-8"
    )


def test_validator_sees_a_daemonsets_host_port_on_a_new_node() -> None:
    pod = make_pod("p", 1, host_ports=PORT)
    plan = python_engine.solve(snapshot([pod]))
    violations = validate(snapshot([pod], daemonsets=(agent(host_ports=PORT),)), plan)
    assert any("host port 8080/TCP conflict" in v for v in violations)


def test_validator_sees_a_daemonsets_host_port_on_an_existing_node() -> None:
    pod, node = make_pod("p", 1, host_ports=PORT), make_node("n1", article_flavors()[2])
    plan = python_engine.solve(snapshot([pod], nodes=(node,)))
    assert plan.existing_nodes["n1"] == ("default/p",)
    violations = validate(snapshot([pod], nodes=(node,), daemonsets=(agent(host_ports=PORT),)), plan)
    assert violations == ["default/p on n1: host port 8080/TCP conflict"]


def test_validator_sees_a_flavor_too_small_for_its_daemonsets() -> None:
    pod = make_pod("p", 0, 256 * MI)
    plan = python_engine.solve(snapshot([pod]))
    assert [c.instance_type for c in plan.node_claims] == ["c3-4"]
    violations = validate(snapshot([pod], daemonsets=(agent(3),)), plan)
    assert any("cpu over-committed" in v for v in violations)
