"""Create-or-update for plain manifests, on our API client: the sandbox tests and the demo set up clusters
with it. Kinds are found through discovery, so any installed CRD works."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from kapstan.kube.client import Client, Resource
from kapstan.kube.errors import ApiError

CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)


async def resource_of(client: Client, manifest: dict[str, Any]) -> Resource:
    kinds = await client.resources(manifest["apiVersion"])
    try:
        return kinds[manifest["kind"]]
    except KeyError:
        raise ValueError(f"the API server serves no {manifest['kind']} in {manifest['apiVersion']}") from None


async def apply(client: Client, manifests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Create each object, or replace it (keeping the server's resourceVersion) when it exists."""
    applied = []
    for manifest in manifests:
        resource = await resource_of(client, manifest)
        try:
            applied.append(await client.create(resource, manifest))
        except ApiError as error:
            if not error.conflict:
                raise
            meta = manifest["metadata"]
            current = await client.get(resource, meta["name"], meta.get("namespace"))
            body = {
                **manifest,
                "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]},
            }
            applied.append(await client.replace(resource, body))
    return applied


async def install_crds(client: Client, crds: list[dict[str, Any]], timeout: float = 30.0) -> None:
    """Apply ``crds`` and wait until the server serves them (Established)."""
    await apply(client, crds)
    for _ in range(int(timeout / 0.1)):
        states = [await client.get(CRDS, crd["metadata"]["name"]) for crd in crds]
        if all(_established(state) for state in states):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"CRDs not Established after {timeout:.0f}s")


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
