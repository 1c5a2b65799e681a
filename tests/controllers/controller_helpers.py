"""Helpers for running kapstan controllers against the session sandbox: a namespace with a standalone
Cluster and a managed MD, the CRDs, the informers and a controller as tasks, and polling on the loop."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from kapstan.capi import contract as c
from kapstan.capi.provider import CloudProvider
from kapstan.controllers.state import ClusterRef, ClusterState
from kapstan.install.crds import crds
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox
from kapstan.local import manifests as m
from polling import eventually as eventually

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
MANAGED = {"kapstan.io/managed": "true"}
CLUSTER = "c"
MD = "pool"
TEMPLATE = "workers"
_ids = itertools.count()


class Runnable(Protocol):
    async def run(self) -> None: ...


def unique(prefix: str) -> str:
    """A name no other test of the session uses (NodePools and NodeClasses are cluster-scoped)."""
    return f"{prefix}-{int(time.time())}-{next(_ids)}"


async def connect(sandbox: Sandbox) -> Client:
    """The sandbox's one API server (management and workload), with kapstan's CRDs installed."""
    client = await Client.connect(str(sandbox.management_kubeconfig))
    for crd in crds():
        try:
            await client.create(CRDS, crd)
        except ApiError as error:
            if not error.conflict:  # installed by an earlier test of the session
                raise

    async def established() -> bool:
        for crd in crds():
            found = await client.get(CRDS, crd["metadata"]["name"])
            conditions = found.get("status", {}).get("conditions") or []
            if not any(x["type"] == "Established" and x["status"] == "True" for x in conditions):
                return False
        return True

    await eventually("kapstan's CRDs to be Established", established, timeout=30.0)
    return client


async def create(client: Client, manifest: dict[str, Any]) -> dict[str, Any]:
    group, _, version = manifest["apiVersion"].rpartition("/")
    kinds = await client.resources(f"{group}/{version}" if group else version)
    return await client.create(kinds[manifest["kind"]], manifest)


async def standalone_pool(
    client: Client,
    prefix: str,
    *,
    taints: list[dict[str, str]] | None = None,
    replicas: int = 0,
    annotations: dict[str, str] | None = None,
) -> str:
    """A fresh namespace holding Cluster ``c`` and MD ``pool`` over bootstrap template ``workers``."""
    ns = unique(f"ctl-{prefix}")
    await client.create(NAMESPACES, {"metadata": {"name": ns}})
    md = m.machine_deployment(MD, ns, CLUSTER, TEMPLATE, "c3-8", replicas=replicas)
    md["metadata"]["annotations"] = dict(MANAGED if annotations is None else annotations)
    for manifest in [
        *m.standalone_cluster(CLUSTER, ns),
        m.flavor_template("c3-8", ns),
        m.kubeadm_config_template(TEMPLATE, ns, taints),
        md,
    ]:
        await create(client, manifest)
    return ns


def provider_of(state: ClusterState) -> CloudProvider:
    """The provider ``kapstan run`` wires: the state's, on its management client and informers."""
    return state.provider


async def scale_to_zero(client: Client, ns: str) -> None:
    """Machines make Nodes, which are cluster-wide: leave none behind for the other tests."""
    await client.patch(c.CLUSTERS, CLUSTER, {"spec": {"paused": False}}, namespace=ns)
    for md in (await client.request("GET", c.MACHINEDEPLOYMENTS, namespace=ns))["items"]:
        await client.patch(
            c.MACHINEDEPLOYMENTS, c.name(md), {"spec": {"replicas": 0}}, namespace=ns, subresource="scale"
        )


@asynccontextmanager
async def running(state: ClusterState, *controllers: Runnable) -> AsyncIterator[None]:
    """The state's informers, synced, and ``controllers`` running as tasks until the block ends."""
    tasks = [asyncio.ensure_future(state.run())]
    try:
        await asyncio.wait_for(state.wait_synced(), 60.0)
        tasks += [asyncio.ensure_future(controller.run()) for controller in controllers]
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Cleanup:
    """Cluster-scoped objects a test made, deleted (finalizers first) when it ends whatever happened."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.made: list[tuple[Resource, str]] = []

    async def create(self, resource: Resource, body: Object) -> Object:
        created = await self.client.create(resource, body)
        self.made.append((resource, body["metadata"]["name"]))
        return created

    async def delete_all(self) -> None:
        for resource, name in reversed(self.made):
            try:
                await self.client.patch(resource, name, {"metadata": {"finalizers": None}})
                await self.client.delete(resource, name)
            except ApiError as error:
                if not error.not_found:
                    raise


@asynccontextmanager
async def cleanup(client: Client) -> AsyncIterator[Cleanup]:
    made = Cleanup(client)
    try:
        yield made
    finally:
        await made.delete_all()


def cluster_state(client: Client, ns: str) -> ClusterState:
    return ClusterState(client, client, ClusterRef(ns, CLUSTER))
