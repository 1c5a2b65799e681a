"""The generated RBAC on a real API server's authorizer: as its ServiceAccounts, every kind of call kapstan
makes succeeds (through the operator's own informers, leader election and event recorder where possible),
and calls outside its job are refused with 403.

The sandbox is one API server for both sides, so the workload and management ServiceAccounts live side by
side; each gets unique names (ClusterRoles are shared by the whole test session) and is removed afterwards.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kapstan.api.wellknown import MACHINE_ANNOTATION, NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.controllers.state import ClusterRef, ClusterState
from kapstan.install import rbac
from kapstan.install.crds import crds
from kapstan.kube import kinds
from kapstan.kube.client import CONFIGMAPS, LEASES, Client, Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder, list_events
from kapstan.kube.leader import LeaderElector
from kapstan.local import Sandbox
from kapstan.local import manifests as m

pytestmark = pytest.mark.sandbox

INFRA_GROUP = "infrastructure.kapstan.dev"
SECRETS = Resource("", "v1", "secrets", "Secret")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
RBAC_KINDS = {
    "ClusterRole": Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    "ClusterRoleBinding": Resource(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
    ),
    "Role": Resource("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    "RoleBinding": Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    "ServiceAccount": Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    "Secret": SECRETS,
    "Namespace": kinds.NAMESPACES,
}
MANIFEST_KINDS = {
    "Cluster": c.CLUSTERS,
    "MachineDeployment": c.MACHINEDEPLOYMENTS,
    "KubeadmConfigTemplate": c.KUBEADMCONFIGTEMPLATES,
    "TestMachineTemplate": Resource(INFRA_GROUP, "v1alpha1", "testmachinetemplates", "TestMachineTemplate"),
    "TestCluster": Resource(INFRA_GROUP, "v1alpha1", "testclusters", "TestCluster"),
    "TestControlPlane": Resource(
        "controlplane.kapstan.dev", "v1alpha1", "testcontrolplanes", "TestControlPlane"
    ),
}


@dataclass(frozen=True)
class Setup:
    admin: str
    workload_sa: str  # kubeconfigs
    management_sa: str
    name: str  # of the workload ServiceAccount, ClusterRole, ...; also the Node and NodePool made here
    namespace: str  # kapstan's, in the "workload cluster"
    cluster: ClusterRef  # the Cluster kapstan scales, in its own namespace
    other: str  # a namespace with another Cluster's MD and a Secret


async def _create(client: Client, manifest: Object) -> Object:
    resource = RBAC_KINDS.get(manifest["kind"]) or MANIFEST_KINDS[manifest["kind"]]
    return await client.create(resource, manifest)


async def _install_crds(client: Client) -> None:
    """Other tests of the session may have installed them already; they stay for them."""
    for crd in crds():
        try:
            await client.create(CRDS, crd)
        except ApiError as error:
            if not error.conflict:
                raise
    for _ in range(300):
        states = [await client.get(CRDS, crd["metadata"]["name"]) for crd in crds()]
        if all(
            any(
                x["type"] == "Established" and x["status"] == "True"
                for x in s["status"].get("conditions", [])
            )
            for s in states
        ):
            return
        await asyncio.sleep(0.1)
    raise AssertionError("CRDs not Established after 30 s")


def _capi_objects(namespace: str, cluster: str) -> list[Object]:
    objects = m.standalone_cluster(cluster, namespace)
    # Paused: Cluster API leaves the objects alone, so scaling the MD here creates no Machines.
    objects[-1]["spec"]["paused"] = True
    return [
        *objects,
        m.flavor_template("c3-8", namespace),
        m.kubeadm_config_template("workers", namespace),
        m.machine_deployment("pool", namespace, cluster, "workers", "c3-8", replicas=0),
    ]


def _machine(namespace: str, cluster: str, name: str) -> Object:
    labels = {c.CLUSTER_NAME_LABEL: cluster, c.DEPLOYMENT_NAME_LABEL: "pool"}
    return {
        "apiVersion": c.MACHINES.api_version,
        "kind": "Machine",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "clusterName": cluster,
            "bootstrap": {"dataSecretName": "none"},
            "infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": "TestMachine", "name": name},
        },
    }


async def _setup(sandbox: Sandbox, names: Setup) -> Setup:
    admin = await Client.connect(names.admin)
    name, namespace, cluster, other = names.name, names.namespace, names.cluster, names.other
    cluster_ns = cluster.namespace
    await _install_crds(admin)
    for manifest in rbac.workload_rbac(namespace, name=name):
        await _create(admin, manifest)
    for ns in (cluster_ns, other):
        await admin.create(kinds.NAMESPACES, {"metadata": {"name": ns}})
        for manifest in _capi_objects(ns, cluster.name if ns == cluster_ns else "other"):
            await _create(admin, manifest)
        await admin.create(SECRETS, {"metadata": {"name": "credentials", "namespace": ns}})
    # A second Cluster in the same namespace: kapstan may list it, never read or change it by name.
    neighbour = m.standalone_cluster("neighbour", cluster_ns)[-1]
    neighbour["spec"]["paused"] = True
    await _create(admin, neighbour)
    await admin.create(c.MACHINES, _machine(cluster_ns, cluster.name, "pool-m1"))
    for manifest in rbac.management_rbac(cluster.namespace, cluster.name, infrastructure_group=INFRA_GROUP):
        await _create(admin, manifest)
    # Objects kapstan's informers and status controllers read, cluster-wide.
    await admin.create(kinds.NODES, {"metadata": {"name": name}})
    node_class = {"apiVersion": kinds.NODECLASSES.api_version, "kind": kinds.NODECLASSES.kind}
    await admin.create(kinds.NODECLASSES, {**node_class, "metadata": {"name": name}, "spec": {}})
    await admin.create(kinds.NODEPOOLS, _nodepool(name))
    await admin.create(CONFIGMAPS, {"metadata": {"name": "prices", "namespace": other}, "data": {"a": "1"}})
    ready = dataclasses.replace(
        names,
        workload_sa=str(sandbox.service_account_kubeconfig(namespace, name)),
        management_sa=str(
            sandbox.service_account_kubeconfig(cluster_ns, rbac.management_name(cluster.name), workload=False)
        ),
    )
    await _wait_for_bindings(ready)
    return ready


def _nodepool(name: str) -> Object:
    return {
        "apiVersion": kinds.NODEPOOLS.api_version,
        "kind": kinds.NODEPOOLS.kind,
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": rbac.NODECLASS, "kind": "ClusterAPINodeClass", "name": name},
                    "requirements": [],
                }
            }
        },
    }


async def _teardown(setup: Setup) -> None:
    admin = await Client.connect(setup.admin)
    for resource, name, namespace in [
        (kinds.NODECLAIMS, setup.name, None),
        (kinds.NODEPOOLS, setup.name, None),
        (kinds.NODECLASSES, setup.name, None),
        (kinds.NODES, setup.name, None),
        (RBAC_KINDS["ClusterRoleBinding"], setup.name, None),
        (RBAC_KINDS["ClusterRole"], setup.name, None),
    ]:
        await _gone(admin.delete(resource, name, namespace))
    for namespace in (setup.cluster.namespace, setup.other):
        # The Clusters are paused, so Cluster API put its finalizers on them and their MDs and Machines
        # but will not act on their deletion. Nothing real stands behind these objects: drop the
        # finalizers, or the namespaces would stay Terminating for the rest of the session.
        for resource in (c.MACHINES, c.MACHINEDEPLOYMENTS, c.CLUSTERS):
            listed = await admin.request("GET", resource, namespace=namespace)
            for obj in listed.get("items", []):
                await _gone(admin.delete(resource, c.name(obj), namespace))
                release = {"metadata": {"finalizers": None}}
                await _gone(admin.patch(resource, c.name(obj), release, namespace=namespace))
    for namespace in (setup.namespace, setup.cluster.namespace, setup.other):
        await _gone(admin.delete(kinds.NAMESPACES, namespace))


async def _gone(call: Awaitable[Any]) -> None:
    """Run a clean-up call; what is already gone (or was never made) is fine."""
    try:
        await call
    except ApiError as error:
        if not error.not_found:
            raise


@pytest.fixture(scope="module")
def setup(sandbox: Sandbox) -> Iterator[Setup]:
    names = _names(sandbox, uuid.uuid4().hex[:6])
    try:
        yield asyncio.run(_setup(sandbox, names))
    finally:
        # Also after a failed set-up: whatever exists under the names chosen goes.
        asyncio.run(_teardown(names))


def _names(sandbox: Sandbox, suffix: str) -> Setup:
    name = f"kapstan-rbac-{suffix}"
    return Setup(
        admin=str(sandbox.kubeconfig),
        workload_sa="",
        management_sa="",
        name=name,
        namespace=name,
        cluster=ClusterRef(f"rbac-mgmt-{suffix}", f"c-{suffix}"),
        other=f"rbac-other-{suffix}",
    )


async def _wait_for_bindings(setup: Setup) -> None:
    """The RBAC authorizer reads bindings through an informer: give it a moment to see the new ones."""
    workload = await Client.connect(setup.workload_sa)
    management = await Client.connect(setup.management_sa)
    for _ in range(100):
        try:
            await workload.request("GET", kinds.PODS, params={"limit": "1"})
            await management.get(c.CLUSTERS, setup.cluster.name, setup.cluster.namespace)
            await workload.get(LEASES, "kapstan", setup.namespace)
        except ApiError as error:
            if error.status == 404:  # the Lease does not exist yet, but reading it was allowed
                return
            await asyncio.sleep(0.1)
            continue
        return
    raise AssertionError("the ServiceAccounts' bindings did not take effect within 10 s")


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
            "spec": _nodepool(name)["spec"]["template"]["spec"],
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
