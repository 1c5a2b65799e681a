"""The world the RBAC sandbox tests run in: the generated workload and management RBAC applied to the
sandbox's one API server under unique names, paused CAPI objects in the Cluster's namespace and in another
one, the cluster-wide objects kapstan reads, the ServiceAccounts' kubeconfigs, and its removal."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from kapstan.capi import contract as c
from kapstan.controllers.state import ClusterRef
from kapstan.install import rbac
from kapstan.install.crds import crds
from kapstan.kube import kinds
from kapstan.kube.client import CONFIGMAPS, LEASES, Client, Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox
from kapstan.local import manifests as m

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
    """The names of one world, and its ServiceAccounts' kubeconfigs once it is built."""

    admin: str
    workload_sa: str  # kubeconfigs
    management_sa: str
    name: str  # of the workload ServiceAccount, ClusterRole, ...; also the Node and NodePool made here
    namespace: str  # kapstan's, in the "workload cluster"
    cluster: ClusterRef  # the Cluster kapstan scales, in its own namespace
    other: str  # a namespace with another Cluster's MD and a Secret


async def create_manifest(client: Client, manifest: Object) -> Object:
    resource = RBAC_KINDS.get(manifest["kind"]) or MANIFEST_KINDS[manifest["kind"]]
    return await client.create(resource, manifest)


async def install_crds(client: Client) -> None:
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


def capi_objects(namespace: str, cluster: str) -> list[Object]:
    objects = m.standalone_cluster(cluster, namespace)
    # Paused: Cluster API leaves the objects alone, so scaling the MD here creates no Machines.
    objects[-1]["spec"]["paused"] = True
    return [
        *objects,
        m.flavor_template("c3-8", namespace),
        m.kubeadm_config_template("workers", namespace),
        m.machine_deployment("pool", namespace, cluster, "workers", "c3-8", replicas=0),
    ]


def machine_object(namespace: str, cluster: str, name: str) -> Object:
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


async def build(sandbox: Sandbox, names: Setup) -> Setup:
    admin = await Client.connect(names.admin)
    name, namespace, cluster, other = names.name, names.namespace, names.cluster, names.other
    cluster_ns = cluster.namespace
    await install_crds(admin)
    for manifest in rbac.workload_rbac(namespace, name=name):
        await create_manifest(admin, manifest)
    for ns in (cluster_ns, other):
        await admin.create(kinds.NAMESPACES, {"metadata": {"name": ns}})
        for manifest in capi_objects(ns, cluster.name if ns == cluster_ns else "other"):
            await create_manifest(admin, manifest)
        await admin.create(SECRETS, {"metadata": {"name": "credentials", "namespace": ns}})
    # A second Cluster in the same namespace: kapstan may list it, never read or change it by name.
    neighbour = m.standalone_cluster("neighbour", cluster_ns)[-1]
    neighbour["spec"]["paused"] = True
    await create_manifest(admin, neighbour)
    await admin.create(c.MACHINES, machine_object(cluster_ns, cluster.name, "pool-m1"))
    for manifest in rbac.management_rbac(cluster.namespace, cluster.name, infrastructure_group=INFRA_GROUP):
        await create_manifest(admin, manifest)
    # Objects kapstan's informers and status controllers read, cluster-wide.
    await admin.create(kinds.NODES, {"metadata": {"name": name}})
    node_class = {"apiVersion": kinds.NODECLASSES.api_version, "kind": kinds.NODECLASSES.kind}
    await admin.create(kinds.NODECLASSES, {**node_class, "metadata": {"name": name}, "spec": {}})
    await admin.create(kinds.NODEPOOLS, nodepool(name))
    await admin.create(CONFIGMAPS, {"metadata": {"name": "prices", "namespace": other}, "data": {"a": "1"}})
    ready = dataclasses.replace(
        names,
        workload_sa=str(sandbox.service_account_kubeconfig(namespace, name)),
        management_sa=str(
            sandbox.service_account_kubeconfig(cluster_ns, rbac.management_name(cluster.name), workload=False)
        ),
    )
    await wait_for_bindings(ready)
    return ready


def nodepool(name: str) -> Object:
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


async def teardown(setup: Setup) -> None:
    admin = await Client.connect(setup.admin)
    for resource, name, namespace in [
        (kinds.NODECLAIMS, setup.name, None),
        (kinds.NODEPOOLS, setup.name, None),
        (kinds.NODECLASSES, setup.name, None),
        (kinds.NODES, setup.name, None),
        (RBAC_KINDS["ClusterRoleBinding"], setup.name, None),
        (RBAC_KINDS["ClusterRole"], setup.name, None),
    ]:
        await gone(admin.delete(resource, name, namespace))
    for namespace in (setup.cluster.namespace, setup.other):
        # The Clusters are paused, so Cluster API put its finalizers on them and their MDs and Machines
        # but will not act on their deletion. Nothing real stands behind these objects: drop the
        # finalizers, or the namespaces would stay Terminating for the rest of the session.
        for resource in (c.MACHINES, c.MACHINEDEPLOYMENTS, c.CLUSTERS):
            listed = await admin.request("GET", resource, namespace=namespace)
            for obj in listed.get("items", []):
                await gone(admin.delete(resource, c.name(obj), namespace))
                release = {"metadata": {"finalizers": None}}
                await gone(admin.patch(resource, c.name(obj), release, namespace=namespace))
    for namespace in (setup.namespace, setup.cluster.namespace, setup.other):
        await gone(admin.delete(kinds.NAMESPACES, namespace))


async def gone(call: Awaitable[Any]) -> None:
    """Run a clean-up call; what is already gone (or was never made) is fine."""
    try:
        await call
    except ApiError as error:
        if not error.not_found:
            raise


def names_for(sandbox: Sandbox, suffix: str) -> Setup:
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


async def wait_for_bindings(setup: Setup) -> None:
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
