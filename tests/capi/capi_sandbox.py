"""What the provider's sandbox tests share: a fresh namespace with a standalone Cluster and an MD ``pool``
on the one session sandbox, reads of what CAPI did, and the clean-up that empties those namespaces of
Machines when a test ends (their Nodes are cluster-wide)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kapstan.capi import contract as c
from kapstan.capi.cache import ManagementCache
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Client, Resource
from kapstan.local import Sandbox
from kapstan.local import manifests as m
from polling import eventually as eventually

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
_ids = itertools.count()
_namespaces: list[str] = []
"""Namespaces made by the running test, emptied of Machines when it ends (their Nodes are cluster-wide)."""


async def new_namespace(client: Client, prefix: str) -> str:
    ns = f"capi-{prefix}-{int(time.time())}-{next(_ids)}"
    await client.create(NAMESPACES, {"metadata": {"name": ns}})
    _namespaces.append(ns)
    return ns


async def scale_everything_to_zero(client: Client) -> None:
    while _namespaces:
        ns = _namespaces.pop()
        for cluster in (await client.request("GET", c.CLUSTERS, namespace=ns))["items"]:
            await client.patch(c.CLUSTERS, c.name(cluster), {"spec": {"paused": False}}, namespace=ns)
        for md in (await client.request("GET", c.MACHINEDEPLOYMENTS, namespace=ns))["items"]:
            unpause = {"metadata": {"annotations": {c.PAUSED_ANNOTATION: None}}}
            await client.patch(c.MACHINEDEPLOYMENTS, c.name(md), unpause, namespace=ns)
            zero = {"spec": {"replicas": 0}}
            await client.patch(c.MACHINEDEPLOYMENTS, c.name(md), zero, namespace=ns, subresource="scale")


async def new_pool(
    client: Client, prefix: str, annotations: dict[str, str] | None = None, *, version: str | None = None
) -> FlavorSource:
    """A fresh namespace with a standalone Cluster and an MD ``pool`` at 0 replicas (its Machines of
    ``version`` when given, else the control plane's)."""
    ns = await new_namespace(client, prefix)
    md = m.machine_deployment("pool", ns, "c", "workers", "c3-8")
    md["metadata"]["annotations"] = dict(annotations or {})
    if version is not None:
        md["spec"]["template"]["spec"]["version"] = version
    for manifest in [
        *m.standalone_cluster("c", ns),
        m.flavor_template("c3-8", ns),
        m.kubeadm_config_template("workers", ns),
        md,
    ]:
        await create_object(client, manifest)
    return FlavorSource("MachineDeployment", ns, "pool", "c")


async def create_object(client: Client, manifest: dict[str, Any]) -> None:
    group, _, version = manifest["apiVersion"].rpartition("/")
    kind = manifest["kind"]
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    await client.create(Resource(group, version, plural, kind), manifest)


async def md_of(client: Client, source: FlavorSource) -> dict[str, Any]:
    return await client.get(c.MACHINEDEPLOYMENTS, source.name, source.namespace)


async def machine_names(client: Client, source: FlavorSource) -> list[str]:
    found = await client.request(
        "GET",
        c.MACHINES,
        namespace=source.namespace,
        params={"labelSelector": f"{c.DEPLOYMENT_NAME_LABEL}=pool"},
    )
    return sorted(c.name(item) for item in found["items"])


def run_on_sandbox(
    sandbox: Sandbox, scenario: Callable[[Client, MachineDeploymentProvider], Awaitable[None]]
) -> None:
    async def main() -> None:
        client = await Client.connect(str(sandbox.management_kubeconfig))
        try:
            await scenario(
                client,
                MachineDeploymentProvider(client, ManagementCache(client, None, "c"), machine_timeout=30.0),
            )
        finally:
            await scale_everything_to_zero(client)

    asyncio.run(main())
