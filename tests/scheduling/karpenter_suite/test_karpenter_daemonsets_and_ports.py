"""DaemonSet overhead and host ports: Karpenter `provisioning/suite_test.go` ("Daemonsets") and kube-
scheduler's NodePorts filter. Every DaemonSet whose pod would run on a new node (its node selector,
affinity and tolerations admit the node) costs its requests there and holds its host ports; a flavor too
small for those DaemonSets cannot be chosen."""

from __future__ import annotations

from dataclasses import replace

import pytest
from karpenter_kit import (
    existing,
    flavor,
    flavors_of,
    placed,
    plan_for,
    pod,
    pool,
    req,
    snap,
    term,
)

from builders import GI
from kapstan.scheduling.model import (
    ARCH,
    INSTANCE_TYPE,
    ZONE,
    DaemonSet,
    HostPort,
    NodePool,
    PreferredNodeTerm,
    Taint,
    Toleration,
)

TWO_SIZES = (flavor("2cpu-2gi", 2, 2, 2.5), flavor("4cpu-4gi", 4, 4, 5.0))


def daemon(cores: float = 1, memory_gi: float = 1, **fields: object) -> tuple[DaemonSet, ...]:
    agent = pod("agent", cores, round(memory_gi * GI), namespace="kube-system", **fields)
    return (DaemonSet("kube-system/agent", agent),)


def chosen(engine: str, *daemonsets: DaemonSet, pools: tuple[NodePool, ...] | None = None) -> list[str]:
    snapshot = snap([pod("p", 1, GI)], flavors=TWO_SIZES, pools=pools, daemonsets=daemonsets)
    return flavors_of(plan_for(snapshot, engine))


def test_daemonset_overhead_picks_the_bigger_flavor(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should account for daemonsets": a 1.5 vCPU/1.5Gi DaemonSet and
    a 1 vCPU/1Gi pod need the 4 vCPU/4Gi flavor; without the DaemonSet the 2 vCPU/2Gi one suffices."""
    assert chosen(engine, *daemon(1.5, 1.5)) == ["4cpu-4gi"]
    assert chosen(engine) == ["2cpu-2gi"]


def test_daemonset_overhead_with_a_startup_taint(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should account for daemonsets (with startup taint)"."""
    pools = (pool(startup_taints=(Taint("foo.com/taint", "NoSchedule"),)),)
    assert chosen(engine, *daemon(1.5, 1.5), pools=pools) == ["4cpu-4gi"]


def test_daemonset_overhead_too_large_for_every_flavor(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should not schedule if daemonset overhead is too large"."""
    assert chosen(engine, *daemon(10000, 10000)) == []


def test_a_daemonsets_host_port_blocks_the_pod(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should account for daemonset hostports": every new node's
    DaemonSet holds 8080, so a pod wanting 8080 gets no node."""
    wants_port = pod("p", 1, GI, host_ports=(HostPort(8080),))
    snapshot = snap(
        [wants_port], flavors=TWO_SIZES, daemonsets=daemon(0.5, 0.5, host_ports=(HostPort(8080),))
    )
    plan = plan_for(snapshot, engine)
    assert plan.node_claims == () and "default/p" in plan.unschedulable


def test_a_daemonset_that_will_not_run_keeps_no_port(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should not account for daemonset hostports when daemonset would
    not schedule on selected node"."""
    ds = daemon(0.5, 0.5, host_ports=(HostPort(8080),), node_selector={"elsewhere": "true"})
    snapshot = snap([pod("p", 1, GI, host_ports=(HostPort(8080),))], flavors=TWO_SIZES, daemonsets=ds)
    assert placed(plan_for(snapshot, engine)) == {"default/p"}


def test_a_daemonset_without_the_toleration_is_ignored(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should ignore daemonsets without matching tolerations"."""
    taint = Taint("foo", "NoSchedule", "bar")
    tolerant = pod("p", 1, GI, tolerations=(Toleration("foo", "Equal", "bar", "NoSchedule"),))
    snapshot = snap(
        [tolerant], flavors=TWO_SIZES, pools=(pool(taints=(taint,)),), daemonsets=daemon(1.5, 1.5)
    )
    assert flavors_of(plan_for(snapshot, engine)) == ["2cpu-2gi"]


def test_a_daemonset_for_another_arch_is_ignored(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should ignore daemonsets when no instance types meet the
    daemonset requirements"."""
    assert chosen(engine, *daemon(1.5, 1.5, node_selector={ARCH: "arm64"})) == ["2cpu-2gi"]


def test_a_daemonset_selecting_the_pool_label_counts(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should account for daemonsets with a custom label nodeSelector
    that matches the nodepool"."""
    pools = (pool(labels={"team": "a"}),)
    assert chosen(engine, *daemon(1.5, 1.5, node_selector={"team": "a"}), pools=pools) == ["4cpu-4gi"]


def test_a_daemonset_for_one_flavor_only_weighs_on_that_flavor(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should filter out daemonsets based on instance type
    requirements": a DaemonSet pinned to the small flavor makes the small one too full, not the big one."""
    ds = daemon(1.5, 1.5, node_selector={INSTANCE_TYPE: "2cpu-2gi"})
    assert chosen(engine, *ds) == ["4cpu-4gi"]
    ds = daemon(3.5, 1.5, node_selector={INSTANCE_TYPE: "4cpu-4gi"})
    assert chosen(engine, *ds) == ["2cpu-2gi"]


def test_a_daemonset_not_in_on_a_missing_key_counts(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should account daemonsets with NotIn operator and unspecified
    key"."""
    ds = daemon(1.5, 1.5, required_terms=(term(req("foo", "NotIn", "bar")),))
    assert chosen(engine, *ds) == ["4cpu-4gi"]


def test_a_daemonset_with_one_matching_affinity_term_counts(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should consider a daemonset schedulable with multiple node
    affinity terms"."""
    ds = daemon(1.5, 1.5, required_terms=(term(req(ARCH, "In", "arm64")), term(req(ZONE, "Exists"))))
    assert chosen(engine, *ds) == ["4cpu-4gi"]


def test_a_daemonset_with_an_unmet_preference_counts(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should consider a daemonset schedulable with an incompatible
    node affinity preference"."""
    ds = daemon(1.5, 1.5, preferred_terms=(PreferredNodeTerm(1, term(req(ARCH, "In", "s390x"))),))
    assert chosen(engine, *ds) == ["4cpu-4gi"]


def test_a_daemonset_on_a_prefer_no_schedule_pool_counts(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should consider a daemonset schedulable with a PreferNoSchedule
    taint"."""
    pools = (pool(taints=(Taint("foo", "PreferNoSchedule", "bar"),)),)
    assert chosen(engine, *daemon(1.5, 1.5), pools=pools) == ["4cpu-4gi"]


def test_a_flavor_too_small_for_its_daemonsets_is_not_chosen(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should not schedule if daemonset overhead is too large", for one
    flavor: a 2.5 vCPU DaemonSet cannot run on the 2 vCPU flavor, so Karpenter filters that flavor out and
    the pod goes on the 4 vCPU one (kube-scheduler would otherwise leave the DaemonSet pod pending)."""
    snapshot = snap([pod("p", 0.5, GI)], flavors=TWO_SIZES, daemonsets=daemon(2.5, 0.5))
    assert flavors_of(plan_for(snapshot, engine)) == ["4cpu-4gi"]


def test_the_same_host_port_takes_two_nodes(engine: str) -> None:
    """Karpenter scheduling suite_test.go "In-Flight Nodes": "should schedule pods with the same host port to
    different nodes"; kube-scheduler nodeports "same port" conflict."""
    plan = plan_for(snap([pod(f"p{i}", 0.2, host_ports=(HostPort(80),)) for i in range(2)]), engine)
    assert len(plan.node_claims) == 2


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (HostPort(8080, "TCP"), HostPort(8080, "UDP")),
        (HostPort(8080, "TCP", "127.0.0.1"), HostPort(8080, "TCP", "127.0.0.2")),
        (HostPort(8080), HostPort(8081)),
    ],
    ids=["other-protocol", "other-host-ip", "other-port"],
)
def test_host_ports_that_do_not_conflict_share_a_node(engine: str, first: HostPort, second: HostPort) -> None:
    """kube-scheduler node_ports_test.go: "other port", "same udp port" vs TCP, "different host ip": no
    conflict, one node."""
    pods = [pod("a", 0.2, host_ports=(first,)), pod("b", 0.2, host_ports=(second,))]
    assert len(plan_for(snap(pods), engine).node_claims) == 1


def test_a_wildcard_host_ip_conflicts_with_a_specific_one(engine: str) -> None:
    """kube-scheduler node_ports_test.go: "second ip 0.0.0.0 conflicts with the first specific ip"."""
    pods = [
        pod("a", 0.2, host_ports=(HostPort(8001, "TCP", "127.0.0.1"),)),
        pod("b", 0.2, host_ports=(HostPort(8001, "TCP", "0.0.0.0"),)),
    ]
    assert len(plan_for(snap(pods), engine).node_claims) == 2


def test_a_running_pods_host_port_keeps_newcomers_off_its_node(engine: str) -> None:
    """kube-scheduler node_ports_test.go "same port" against a pod already on the node: the newcomer goes to
    a new node although the running one has room."""
    node = existing("n1", pod("old", 0.2, host_ports=(HostPort(9000),)), labels={ZONE: "test-zone-1"}, room=4)
    plan = plan_for(snap([pod("new", 0.2, host_ports=(HostPort(9000),))], nodes=(node,)), engine)
    assert plan.existing_nodes.get("n1", ()) == () and len(plan.node_claims) == 1
    free = plan_for(snap([pod("new", 0.2, host_ports=(HostPort(9001),))], nodes=(node,)), engine)
    assert free.existing_nodes.get("n1") == ("default/new",)


def test_a_daemonset_template_is_its_pods_cost(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should account for overhead using daemonset pod spec instead of
    daemonset spec": what counts is the DaemonSet's pod (here the snapshot's DaemonSet entry), and a
    smaller pod than the template lets the small flavor through."""
    big, small = daemon(1.5, 1.5), daemon(0.25, 0.25)
    assert chosen(engine, *big) == ["4cpu-4gi"]
    assert chosen(engine, replace(big[0], pod=small[0].pod)) == ["2cpu-2gi"]
