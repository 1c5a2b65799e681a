"""The MachineDeployment provider's reads and template revisions, on the in-memory API of the controller
tests: reads come from the management informers' stores (no API call), revisions are written once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controllers.fake_cluster import CLUSTER, NS, World, world
from kapstan.api.wellknown import (
    CLUSTER_NAME_LABEL,
    DEPLOYMENT_NAME_LABEL,
    NODECLAIM_ANNOTATION,
    REVISION_OF_ANNOTATION,
    UNREGISTERED_TAINT_KEY,
)
from kapstan.capi import LaunchedMachine, MachineDeploymentRef, MachineRef, Paused
from kapstan.capi import contract as c
from kapstan.capi.bootstrap import has_unregistered_taint
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.capi.provider import Conflict, RegistrationTaint
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Object
from kapstan.local import article

PLAIN = MachineDeploymentRef(NS, "md-plain")


def _provider(w: World) -> MachineDeploymentProvider:
    return MachineDeploymentProvider(w.api, w.state.capi)  # type: ignore[arg-type]


def _machine(w: World, name: str, provider_id: str, claim: str = "", md: str = "md-c3-4") -> Object:
    meta: dict[str, Any] = {
        "name": name,
        "resourceVersion": "1",
        "namespace": NS,
        "labels": {CLUSTER_NAME_LABEL: CLUSTER.name, DEPLOYMENT_NAME_LABEL: md},
        "annotations": {NODECLAIM_ANNOTATION: claim} if claim else {},
    }
    body = {"apiVersion": c.MACHINES.api_version, "kind": "Machine", "metadata": meta}
    body["spec"] = {"clusterName": CLUSTER.name, "providerID": provider_id, "version": "v1.33.0"}
    w.state.capi.machines.handle({"type": "ADDED", "object": body})  # as the watch delivers it
    return body


def test_machines_are_found_by_claim_and_provider_id_from_the_cache() -> None:
    w = world()
    provider = _provider(w)
    heard: list[str] = []
    provider.on_change(lambda machine: heard.append(machine.nodeclaim or machine.ref.name))
    _machine(w, "m-b", "fake://b", claim="claim-b")
    _machine(w, "m-a", "fake://a", claim="claim-a")
    _machine(w, "m-manual", "fake://manual")  # a manual scale-up: nobody's claim
    assert heard == ["claim-b", "claim-a", "m-manual"]

    a = LaunchedMachine(MachineRef(NS, "m-a"), "claim-a", "md-c3-4", "fake://a")
    assert provider.claimed_by("claim-a") == [a]
    assert [m.ref.name for m in provider.unclaimed()] == ["m-manual"]
    (manual,) = provider.with_provider_id("fake://manual")
    assert (manual.ref.name, manual.nodeclaim) == ("m-manual", "")
    assert provider.with_provider_id("") == []
    assert w.api.writes == []  # nothing but reads


def test_drift_compares_a_machine_with_its_on_delete_md() -> None:
    w = world()
    provider = _provider(w)
    _machine(w, "m-a", "fake://a", claim="claim-a")
    ref = MachineRef(NS, "m-a")
    assert asyncio.run(provider.drift(ref)) == ""  # RollingUpdate: CAPI replaces it itself
    md = w.state.machine_deployments.store.get_by_name("md-c3-4", NS)
    assert md is not None
    md["spec"]["rollout"] = {"strategy": {"type": "OnDelete"}}
    md["spec"]["template"]["spec"]["version"] = "v1.34.0"
    w.api.put(c.MACHINEDEPLOYMENTS, md)
    assert asyncio.run(provider.drift(ref)) == "KubernetesVersionDrifted"
    assert asyncio.run(provider.drift(MachineRef(NS, "gone"))) == ""


def _untainted_pool(w: World) -> None:
    w.add(article.flavor_pool(PLAIN.name, NS, CLUSTER.name, "c3-8", tainted=False))


def test_an_md_is_described_from_the_cache() -> None:
    w = world()
    _untainted_pool(w)
    provider = _provider(w)
    plain = provider.machine_deployment(PLAIN)
    assert plain is not None
    assert (plain.managed, plain.topology_owned, plain.paused, plain.machines) == (True, False, False, 0)
    assert (plain.registration_taint, plain.bootstrap_template) == (RegistrationTaint.MISSING, "md-plain")
    tainted = provider.machine_deployment(MachineDeploymentRef(NS, "md-c3-4"))
    assert tainted is not None and tainted.registration_taint is RegistrationTaint.PRESENT
    assert provider.machine_deployment(MachineDeploymentRef(NS, "nope")) is None
    assert provider.untainted_sources() == [
        f"MachineDeployment {NS}/md-plain: KubeadmConfigTemplate {NS}/md-plain"
    ]


def test_a_revision_is_written_once_and_the_md_pointed_at_it() -> None:
    w = world()
    _untainted_pool(w)
    provider = _provider(w)
    revision = asyncio.run(provider.ensure_registration_taint(PLAIN))
    assert revision.original == "md-plain" and revision.revision.startswith("md-plain-kapstan-")
    made = w.state.bootstrap_templates.store.get_by_name(revision.revision, NS)
    assert made is not None and has_unregistered_taint(made)
    assert c.annotations_of(made)[REVISION_OF_ANNOTATION] == "md-plain"
    original = w.state.bootstrap_templates.store.get_by_name("md-plain", NS)
    assert original is not None and not has_unregistered_taint(original)  # never modified
    now = provider.machine_deployment(PLAIN)
    assert now is not None and now.registration_taint is RegistrationTaint.PRESENT
    assert now.bootstrap_template == revision.revision
    assert provider.untainted_sources() == []

    # A crash between the two writes, replayed: the MD back on the original, the revision still there.
    back = {"spec": {"template": {"spec": {"bootstrap": {"configRef": {"name": "md-plain"}}}}}}
    asyncio.run(w.api.patch(c.MACHINEDEPLOYMENTS, PLAIN.name, back, namespace=NS))
    again = asyncio.run(provider.ensure_registration_taint(PLAIN))
    assert again.revision == revision.revision
    names = [
        c.name(t) for t in w.state.bootstrap_templates.store.objects() if c.name(t).startswith("md-plain")
    ]
    assert sorted(names) == ["md-plain", revision.revision]


def test_a_status_write_since_the_read_does_not_refuse_pointing_the_md_at_its_revision() -> None:
    w = world()
    _untainted_pool(w)
    w.before_patches(c.MACHINEDEPLOYMENTS, lambda md: md.setdefault("status", {}).update(readyReplicas=1))
    revision = asyncio.run(_provider(w).ensure_registration_taint(PLAIN))
    md = w.state.machine_deployments.store.get_by_name(PLAIN.name, NS)
    assert (
        md is not None
        and md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"] == revision.revision
    )
    assert md["status"]["readyReplicas"] == 1


def test_a_bootstrap_reference_changed_since_the_read_refuses_the_revision() -> None:
    w = world()
    _untainted_pool(w)

    def repointed(md: Object) -> None:
        md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"] = "md-plain-by-hand"

    w.before_patches(c.MACHINEDEPLOYMENTS, repointed)
    with pytest.raises(Conflict, match="bootstrap template changed since it was read"):
        asyncio.run(_provider(w).ensure_registration_taint(PLAIN))
    md = w.state.machine_deployments.store.get_by_name(PLAIN.name, NS)
    assert (
        md is not None
        and md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"] == "md-plain-by-hand"
    )


def test_a_paused_cluster_gets_no_revision() -> None:
    w = world()
    _untainted_pool(w)
    asyncio.run(w.api.patch(c.CLUSTERS, CLUSTER.name, {"spec": {"paused": True}}, namespace=NS))
    provider = _provider(w)
    with pytest.raises(Paused):
        asyncio.run(provider.ensure_registration_taint(PLAIN))
    assert w.api.writes_of("create", "kubeadmconfigtemplates") == []
    assert not any(
        UNREGISTERED_TAINT_KEY in str(t["spec"]) and c.name(t).startswith("md-plain")
        for t in w.state.bootstrap_templates.store.objects()
    )


def test_a_machine_and_the_machines_of_an_md_are_read_from_the_cache() -> None:
    w = world()
    provider = _provider(w)
    made = w.machine("m-a", "fake://a")
    _machine(w, "m-b", "fake://b", claim="claim-b")
    _machine(w, "m-other", "fake://other", md="md-other")
    found = provider.machine(MachineRef(NS, "m-a"))
    assert found == LaunchedMachine(MachineRef(NS, "m-a"), "", "md-c3-4", "fake://a")
    assert found.created == made["metadata"]["creationTimestamp"]
    assert found.event_target["metadata"]["name"] == "m-a"  # Events about it go on the Machine
    assert provider.machine(MachineRef(NS, "gone")) is None
    mine = provider.machines_of(MachineDeploymentRef(NS, "md-c3-4"))
    assert [(m.ref.name, m.nodeclaim) for m in mine] == [("m-a", ""), ("m-b", "claim-b")]
    assert provider.machines_of(MachineDeploymentRef("elsewhere", "md-c3-4")) == []
    assert w.api.writes == []


def test_flavor_source_changes_are_heard_but_not_their_status_writes() -> None:
    w = world()
    provider = _provider(w)
    heard: list[str] = []
    provider.on_flavor_source_change(lambda: heard.append("changed"))
    md = w.state.machine_deployments.store.get_by_name("md-c3-4", NS)
    assert md is not None
    w.state.capi.machine_deployments.handle({"type": "MODIFIED", "object": {**md, "status": {"replicas": 2}}})
    assert heard == []  # CAPI's status writes, every few seconds
    paused = {**md, "metadata": {**md["metadata"], "annotations": {c.PAUSED_ANNOTATION: ""}}}
    w.state.capi.machine_deployments.handle({"type": "MODIFIED", "object": paused})
    assert heard == ["changed"]
    template = w.state.bootstrap_templates.store.get_by_name("md-c3-4", NS)
    assert template is not None
    w.state.capi.bootstrap_templates.handle({"type": "MODIFIED", "object": {**template, "spec": {}}})
    cluster = w.state.clusters.store.get_by_name(CLUSTER.name, NS)
    assert cluster is not None
    w.state.capi.clusters.handle({"type": "MODIFIED", "object": {**cluster, "spec": {"paused": True}}})
    assert heard == ["changed"] * 3
    w.state.capi.machine_deployments.handle({"type": "DELETED", "object": paused})
    assert heard == ["changed"] * 4  # the NodeClass status must say the MD is gone


def test_events_about_a_flavor_source_go_on_its_md_or_for_a_worker_class_on_the_cluster() -> None:
    w = world()
    provider = _provider(w)
    md = provider.event_target(FlavorSource("MachineDeployment", NS, "md-c3-4", CLUSTER.name))
    assert md is not None and (md["kind"], c.name(md)) == ("MachineDeployment", "md-c3-4")
    worker = FlavorSource("WorkerClass", NS, "workers", CLUSTER.name, worker_class="default")
    cluster = provider.event_target(worker)
    assert cluster is not None and (cluster["kind"], c.name(cluster)) == ("Cluster", CLUSTER.name)
    assert provider.event_target(FlavorSource("MachineDeployment", NS, "nope", CLUSTER.name)) is None
