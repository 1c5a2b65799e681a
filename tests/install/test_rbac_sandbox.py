"""The generated RBAC on a real API server's authorizer: as its ServiceAccounts, every kind of call kapstan
makes succeeds (through the operator's own informers, leader election and event recorder where possible),
and calls outside its job are refused with 403.

The sandbox is one API server for both sides, so the workload and management ServiceAccounts live side by
side; each gets unique names (ClusterRoles are shared by the whole test session) and is removed afterwards
(rbac_sandbox_world.py builds and removes that world).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Iterator
from typing import Any

import pytest
from rbac_sandbox_world import (
    INFRA_GROUP,
    MANIFEST_KINDS,
    SECRETS,
    Setup,
    build,
    names_for,
    nodepool,
    teardown,
)

from kapstan.api.wellknown import MACHINE_ANNOTATION, NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.controllers.state import ClusterState
from kapstan.kube import kinds
from kapstan.kube.client import CONFIGMAPS, LEASES, Client, Object
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder, list_events
from kapstan.kube.leader import LeaderElector
from kapstan.local import Sandbox
from kapstan.local import manifests as m

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def setup(sandbox: Sandbox) -> Iterator[Setup]:
    names = names_for(sandbox, uuid.uuid4().hex[:6])
    try:
        yield asyncio.run(build(sandbox, names))
    finally:
        # Also after a failed set-up: whatever exists under the names chosen goes.
        asyncio.run(teardown(names))


async def _patch_node(sa: Client, name: str) -> Object:
    """Labels and a taint, conditional on the resourceVersion read, as registration and termination do
    (the node lifecycle controller writes the Node too: a conflict means read again)."""
    for _ in range(10):
        node = await sa.get(kinds.NODES, name)
        patch = {
            "metadata": {
                "labels": {"karpenter.sh/registered": "true"},
                "resourceVersion": node["metadata"]["resourceVersion"],
            },
            "spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]},
        }
        try:
            return await sa.patch(kinds.NODES, name, patch)
        except ApiError as error:
            if not error.conflict:
                raise
    raise AssertionError(f"node {name} kept changing")


async def _forbidden(call: Awaitable[Any]) -> None:
    with pytest.raises(ApiError) as caught:
        await call
    assert caught.value.status == 403, caught.value


def test_the_operators_informers_and_template_reads_work_as_its_service_accounts(setup: Setup) -> None:
    """ClusterState is what `kapstan run` builds: every informer lists and watches, in its cluster and
    namespace, and templates and price tables are read through discovery + GET."""

    async def scenario() -> None:
        workload = await Client.connect(setup.workload_sa)
        management = await Client.connect(setup.management_sa)
        state = ClusterState(workload, management, setup.cluster)
        running = asyncio.ensure_future(state.run())
        try:
            await asyncio.wait_for(state.wait_synced(), timeout=30)
        except TimeoutError:
            stuck = [i.resource.plural for i in state.informers if not i.has_synced]
            raise AssertionError(f"informers not synced as the ServiceAccounts: {stuck}") from None
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
        assert [c.name(md) for md in state.machine_deployments.store.objects()] == ["pool"]
        assert {c.name(x) for x in state.clusters.store.objects()} == {setup.cluster.name, "neighbour"}
        ns = setup.cluster.namespace
        template = await state.templates.get(INFRA_GROUP, "TestMachineTemplate", ns, "c3-8")
        assert template is not None and template["spec"]["template"]["spec"]["instanceType"] == "c3-8"
        prices = await state.config_maps.get("", "ConfigMap", setup.other, "prices")
        assert prices is not None and prices["data"] == {"a": "1"}

    asyncio.run(scenario())


def test_workload_calls_succeed_and_the_rest_is_refused(setup: Setup) -> None:
    async def scenario() -> None:
        admin = await Client.connect(setup.admin)
        sa = await Client.connect(setup.workload_sa)
        ns, name = setup.namespace, setup.name

        # Nodes: patched (labels, taints) with a resourceVersion; never replaced or deleted.
        node = await _patch_node(sa, name)
        await _forbidden(sa.replace(kinds.NODES, node))
        await _forbidden(sa.delete(kinds.NODES, name))

        # Pods: evicted through the Eviction API, never deleted. They fit no node, so nothing runs them and
        # an evicted one goes at once.
        for pod in ("evictee", "stays"):
            spec = {
                "nodeSelector": {"kapstan.io/nowhere": name},
                "containers": [{"name": "c", "image": "registry.k8s.io/pause"}],
            }
            await admin.create(kinds.PODS, {"metadata": {"name": pod, "namespace": ns}, "spec": spec})
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "evictee", "namespace": ns},
        }
        await sa.request(
            "POST", kinds.PODS, namespace=ns, name="evictee", subresource="eviction", body=eviction
        )
        await _forbidden(sa.delete(kinds.PODS, "stays", ns))

        # NodeClaims: kapstan's own, from create to delete; the status subresource too.
        claim = {
            "apiVersion": kinds.NODECLAIMS.api_version,
            "kind": "NodeClaim",
            "metadata": {"name": name},
            "spec": nodepool(name)["spec"]["template"]["spec"],
        }
        await sa.create(kinds.NODECLAIMS, claim)
        annotate = {"metadata": {"annotations": {MACHINE_ANNOTATION: "ns/machine"}}}
        await sa.patch(kinds.NODECLAIMS, name, annotate)
        await sa.patch(kinds.NODECLAIMS, name, {"status": {"providerID": "test://x"}}, subresource="status")
        await sa.delete(kinds.NODECLAIMS, name)

        # NodePools and NodeClasses are the user's: status only.
        conditions = [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Ready",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
        for resource in (kinds.NODEPOOLS, kinds.NODECLASSES):
            await sa.patch(resource, name, {"status": {"conditions": conditions}}, subresource="status")
            await _forbidden(sa.patch(resource, name, {"metadata": {"labels": {"x": "y"}}}))
            await _forbidden(sa.delete(resource, name))

        # Events: written (and counted up) by the operator's recorder, never read back.
        target = {"apiVersion": "v1", "kind": "Namespace", **await admin.get(kinds.NAMESPACES, ns)}
        recorder = EventRecorder(sa, "kapstan-rbac-test")
        await recorder.emit(target, "Normal", "Checked", "once")
        await recorder.emit(target, "Normal", "Checked", "once")
        assert [e["count"] for e in await list_events(admin, target)] == [2]
        await _forbidden(sa.request("GET", kinds.EVENTS, namespace=ns))

        # Price tables by name in any namespace; no listing them, and no Secrets anywhere.
        await sa.get(CONFIGMAPS, "prices", setup.other)
        await _forbidden(sa.request("GET", CONFIGMAPS, namespace=setup.other))
        await _forbidden(sa.get(SECRETS, "credentials", setup.other))
        await _forbidden(sa.request("GET", SECRETS, namespace=ns))

        # Leader election: the operator's elector creates, renews and releases its Lease in kapstan's
        # namespace; other Leases and other namespaces are out of reach.
        elector = LeaderElector(sa, ns, "kapstan", "replica-a")
        assert await elector.try_acquire_or_renew()  # create
        assert await elector.try_acquire_or_renew()  # get + update
        await elector.release()
        assert (await admin.get(LEASES, "kapstan", ns))["spec"]["holderIdentity"] == ""
        await admin.create(LEASES, {"metadata": {"name": "someone-else", "namespace": ns}, "spec": {}})
        await _forbidden(sa.get(LEASES, "someone-else", ns))
        lease = {"metadata": {"name": "kapstan", "namespace": "kube-system"}, "spec": {}}
        await _forbidden(sa.create(LEASES, lease))

        # Nothing on the management side: this is a different credential's job.
        await _forbidden(sa.request("GET", c.MACHINEDEPLOYMENTS, namespace=setup.cluster.namespace))

    asyncio.run(scenario())


def test_management_calls_succeed_in_the_clusters_namespace_only(setup: Setup) -> None:
    async def scenario() -> None:
        admin = await Client.connect(setup.admin)
        sa = await Client.connect(setup.management_sa)
        ns, cluster = setup.cluster.namespace, setup.cluster.name

        # Scale through the subresource, conditional on the MD's resourceVersion, as the provider does.
        md = await sa.get(c.MACHINEDEPLOYMENTS, "pool", ns)
        scale = {"metadata": {"resourceVersion": c.resource_version(md)}, "spec": {"replicas": 1}}
        await sa.patch(c.MACHINEDEPLOYMENTS, "pool", scale, namespace=ns, subresource="scale")
        assert c.replicas(await admin.get(c.MACHINEDEPLOYMENTS, "pool", ns)) == 1
        await sa.request("GET", c.MACHINEDEPLOYMENTS, namespace=ns, name="pool", subresource="scale")
        # Template taints point the MD at a new bootstrap template revision it creates first.
        revision = m.kubeadm_config_template(
            "workers-tainted", ns, taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
        )
        await sa.create(c.KUBEADMCONFIGTEMPLATES, revision)
        point = {"spec": {"template": {"spec": {"bootstrap": {"configRef": {"name": "workers-tainted"}}}}}}
        await sa.patch(c.MACHINEDEPLOYMENTS, "pool", point, namespace=ns)
        await _forbidden(sa.delete(c.KUBEADMCONFIGTEMPLATES, "workers", ns))
        await _forbidden(sa.delete(c.MACHINEDEPLOYMENTS, "pool", ns))

        # Machines: claimed and marked for deletion by annotation, never deleted.
        listed = await sa.request(
            "GET", c.MACHINES, namespace=ns, params={"labelSelector": f"{c.DEPLOYMENT_NAME_LABEL}=pool"}
        )
        assert [c.name(x) for x in listed["items"]] == ["pool-m1"]
        for annotation in (NODECLAIM_ANNOTATION, c.DELETE_MACHINE_ANNOTATION):
            mark = {"metadata": {"annotations": {annotation: "true"}}}
            await sa.patch(c.MACHINES, "pool-m1", mark, namespace=ns)
        await _forbidden(sa.delete(c.MACHINES, "pool-m1", ns))

        # Its own Cluster: read and patched (topology entries); the neighbour only listed, never by name.
        await sa.patch(
            c.CLUSTERS, cluster, {"metadata": {"annotations": {"kapstan.io/checked": "yes"}}}, namespace=ns
        )
        await sa.get(c.CLUSTERS, cluster, ns)
        await sa.request("GET", c.CLUSTERCLASSES, namespace=ns)
        await _forbidden(sa.get(c.CLUSTERS, "neighbour", ns))
        await _forbidden(sa.patch(c.CLUSTERS, "neighbour", {"spec": {"paused": False}}, namespace=ns))
        await _forbidden(sa.delete(c.CLUSTERS, cluster, ns))

        # Infrastructure templates: get by name only.
        templates = MANIFEST_KINDS["TestMachineTemplate"]
        await sa.get(templates, "c3-8", ns)
        await _forbidden(sa.request("GET", templates, namespace=ns))

        # Events about the MD, in the management cluster.
        target = {"apiVersion": c.MACHINEDEPLOYMENTS.api_version, "kind": "MachineDeployment", **md}
        await EventRecorder(sa, "kapstan-rbac-test").emit(target, "Normal", "TemplateTainted", "checked")
        assert [e["reason"] for e in await list_events(admin, target)] == ["TemplateTainted"]

        # No Secrets, not even in its own namespace; no other namespace; nothing cluster-wide.
        await _forbidden(sa.get(SECRETS, "credentials", ns))
        await _forbidden(sa.request("GET", SECRETS, namespace=ns))
        other = setup.other
        await _forbidden(sa.get(c.MACHINEDEPLOYMENTS, "pool", other))
        await _forbidden(
            sa.patch(
                c.MACHINEDEPLOYMENTS, "pool", {"spec": {"replicas": 3}}, namespace=other, subresource="scale"
            )
        )
        await _forbidden(sa.get(SECRETS, "credentials", other))
        await _forbidden(sa.request("GET", c.MACHINEDEPLOYMENTS))  # all namespaces
        await _forbidden(sa.request("GET", kinds.PODS))
        await _forbidden(sa.patch(kinds.NODES, setup.name, {"metadata": {"labels": {"x": "y"}}}))

        # Discovery needs no rule of ours (system:discovery): the template cache depends on it.
        assert await sa.preferred_version(INFRA_GROUP) == f"{INFRA_GROUP}/v1alpha1"
        assert "TestMachineTemplate" in await sa.resources(f"{INFRA_GROUP}/v1alpha1")

    asyncio.run(scenario())
