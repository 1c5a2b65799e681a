"""The typed cluster state (``controllers/cluster.py``): each NodeClaim paired with its Node, Machines,
NodePool, pods and offering source, looked up by claim, node, provider ID and pool, and kept while the
stores it is built from do not change. Runs on the fake API and a fake clock."""

from __future__ import annotations

import asyncio
import copy

from controllers.fake_cluster import NS, POOL, World, stamp, world
from kapstan.api.wellknown import INITIALIZED, LAUNCHED, PRICE_ANNOTATION, REGISTERED
from kapstan.capi import LaunchedMachine, MachineRef
from kapstan.controllers.cluster import Cluster
from kapstan.kube.kinds import NODECLAIMS
from kapstan.kube.meta import Meta


def _claim(w: World, *, status: dict[str, object], conditions: tuple[str, ...] = ()) -> str:
    name: str = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    body = copy.deepcopy(w.claim_now(name))
    body["status"] = {
        **status,
        "conditions": [{"type": kind, "status": "True", "reason": kind} for kind in conditions],
    }
    w.api.put(NODECLAIMS, body)
    return name


def test_a_registered_claim_is_paired_with_its_node_machine_pods_and_pool() -> None:
    w = world()
    name = _claim(
        w, status={"providerID": "fake://m-1", "nodeName": "node-1"}, conditions=(LAUNCHED, REGISTERED)
    )
    w.machine("m-1", "fake://m-1", claim=name)
    w.node("node-1", "fake://m-1", taints=[])
    w.pod("web", "node-1")
    w.pod("elsewhere", "node-2")
    view = Cluster(w.state, w.provider).nodes()
    found = view.by_claim(name)
    assert found is not None
    assert found.node_name == "node-1"
    assert found.provider_id == "fake://m-1"
    assert found.pool == POOL
    assert [m.ref.name for m in found.machines] == ["m-1"]
    assert [Meta.of(p).name for p in found.pods] == ["web"]
    assert (found.launched, found.registered, found.initialized) == (True, True, False)
    assert not found.deleting
    assert view.by_node("node-1") is found
    assert view.by_provider_id("fake://m-1") is found
    assert Cluster(w.state, w.provider).in_pool(POOL) == [found]
    assert Cluster(w.state, w.provider).in_pool("other") == []


def test_a_claim_whose_node_name_is_not_recorded_yet_is_paired_by_provider_id() -> None:
    w = world()
    name = _claim(w, status={"providerID": "fake://m-2"}, conditions=(LAUNCHED,))
    w.node("node-2", "fake://m-2")
    found = Cluster(w.state, w.provider).claim(name)
    assert found is not None
    assert found.node_name == "node-2"
    assert found.node_meta is not None and found.node_meta.name == "node-2"


def test_a_node_no_claim_owns_is_an_entry_of_its_own_with_its_machine() -> None:
    w = world()
    w.machine("m-3", "fake://m-3")
    node = w.node("stray", "fake://m-3")
    cluster = Cluster(w.state, w.provider)
    found = cluster.of_node(node)
    assert found.claim is None
    assert found.name == "stray"
    assert [m.ref.name for m in found.machines] == ["m-3"]
    assert not found.claimed_machine
    assert cluster.nodes().by_node("stray") == found
    assert cluster.nodes().claimed == []


def test_a_node_is_found_with_its_claim_by_the_claims_node_name_too() -> None:
    w = world()
    name = _claim(w, status={"nodeName": "node-4"}, conditions=(LAUNCHED, REGISTERED))
    node = w.node("node-4", "")
    found = Cluster(w.state, w.provider).of_node(node)
    assert found.claim_meta is not None and found.claim_meta.name == name


def test_a_machine_claimed_by_a_name_marks_the_node_as_the_lifecycles() -> None:
    w = world()
    w.machine("m-5", "fake://m-5", claim="someone")
    node = w.node("node-5", "fake://m-5")
    assert Cluster(w.state, w.provider).of_node(node).claimed_machine


def test_a_deleting_claim_and_its_price_read_from_the_claim() -> None:
    w = world()
    name = _claim(w, status={}, conditions=(LAUNCHED, REGISTERED, INITIALIZED))
    body = copy.deepcopy(w.claim_now(name))
    body["metadata"]["deletionTimestamp"] = stamp(w.clock)
    body["metadata"]["annotations"][PRICE_ANNOTATION] = "0.25"
    w.api.put(NODECLAIMS, body)
    found = Cluster(w.state, w.provider).claim(name)
    assert found is not None
    assert found.deleting and found.claim_deleting and not found.node_deleting
    assert found.initialized
    assert found.price == 0.25
    assert found.offering == ("c3-4", found.labels["topology.kubernetes.io/zone"], "on-demand")


def test_the_offering_source_comes_from_the_catalog() -> None:
    w = world()
    name = _claim(w, status={})
    catalog = asyncio.run(w.state.simulation_input()).catalog
    found = Cluster(w.state, w.provider).claim(name, catalog)
    assert found is not None and found.source is not None
    assert (found.source.kind, found.source.namespace, found.source.name) == (
        "MachineDeployment",
        NS,
        "md-c3-4",
    )
    assert (
        Cluster(w.state, w.provider).claim(name) is not None
        and Cluster(w.state, w.provider).claim("nope") is None
    )


def test_the_view_is_kept_until_a_store_it_reads_changes() -> None:
    w = world()
    name = _claim(w, status={"nodeName": "node-6"}, conditions=(LAUNCHED, REGISTERED))
    w.node("node-6", "fake://m-6", taints=[])
    cluster = Cluster(w.state, w.provider)
    first = cluster.nodes()
    assert cluster.nodes() is first
    w.pod("arrived", "node-6")
    second = cluster.nodes()
    assert second is not first
    found = second.by_claim(name)
    assert found is not None and [Meta.of(p).name for p in found.pods] == ["arrived"]
    w.provider.add(LaunchedMachine(MachineRef(NS, "m-6"), name, "md-c3-4", "fake://m-6"))  # a Machine change
    third = cluster.nodes()
    assert third is not second
    found = third.by_claim(name)
    assert found is not None and [m.ref.name for m in found.machines] == ["m-6"]


def test_the_kept_view_is_the_one_built_with_the_catalog_asked_for() -> None:
    w = world()
    name = _claim(w, status={})
    catalog = asyncio.run(w.state.simulation_input()).catalog
    cluster = Cluster(w.state, w.provider)
    plain = cluster.nodes().by_claim(name)
    with_sources = cluster.nodes(catalog).by_claim(name)
    assert plain is not None and plain.source is None
    assert with_sources is not None and with_sources.source is not None
    assert cluster.nodes(catalog).by_claim(name) is with_sources
