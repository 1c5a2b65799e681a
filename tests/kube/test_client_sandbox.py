"""Raw requests against a real API server: conditional patches, subresources, and how errors read."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest
from kube_helpers import fresh_namespace

from kapstan.kube.client import CONFIGMAPS, Client
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox


def test_a_json_patch_test_that_fails_is_told_apart_from_an_object_made_invalid(sandbox: Sandbox) -> None:
    """Both are 422: a ``test`` that does not hold is worth a re-read, a label the server rejects is not."""

    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        namespace = await fresh_namespace(client, "jsonpatch")
        await client.create(
            CONFIGMAPS, {"metadata": {"name": "j", "namespace": namespace}, "data": {"v": "1"}}
        )
        with pytest.raises(ApiError) as caught:
            await client.patch(
                CONFIGMAPS,
                "j",
                [{"op": "test", "path": "/data/v", "value": "2"}],
                namespace=namespace,
                patch_type="json",
            )
        assert caught.value.status == 422 and caught.value.test_failed
        with pytest.raises(ApiError) as caught:
            await client.patch(
                CONFIGMAPS,
                "j",
                [{"op": "add", "path": "/metadata/labels", "value": {"not a label!": "x"}}],
                namespace=namespace,
                patch_type="json",
            )
        assert caught.value.status == 422 and not caught.value.test_failed, caught.value

    asyncio.run(scenario())


def test_conditional_patch_and_subresources(sandbox: Sandbox) -> None:
    """A merge patch carrying a stale resourceVersion is refused (409); errors name the object."""

    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        namespace = await fresh_namespace(client, "patch")
        created = await client.create(
            CONFIGMAPS, {"metadata": {"name": "p", "namespace": namespace}, "data": {"v": "1"}}
        )
        stale = created["metadata"]["resourceVersion"]
        patched = await client.patch(CONFIGMAPS, "p", {"data": {"v": "2"}}, namespace=namespace)
        assert patched["data"] == {"v": "2"}
        with pytest.raises(ApiError) as caught:
            await client.patch(
                CONFIGMAPS,
                "p",
                {"metadata": {"resourceVersion": stale}, "data": {"v": "3"}},
                namespace=namespace,
            )
        assert caught.value.conflict
        with pytest.raises(ApiError) as caught:
            await client.patch(
                CONFIGMAPS,
                "p",
                [{"op": "add", "path": "/data/w", "value": "x"}],
                namespace=namespace,
                subresource="nope",
                patch_type="json",
            )
        assert caught.value.not_found
        assert str(caught.value).startswith(f"PATCH configmaps {namespace}/p nope: ")
        assert isinstance(caught.value.__cause__, Exception), "the client's error is chained"

    asyncio.run(scenario())


def _sockets() -> set[str]:
    """This process's open sockets (their inodes), to tell a reused connection from a new one."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:"):
                found.add(target)
    return found


def test_concurrent_requests_reuse_the_pools_connections(sandbox: Sandbox) -> None:
    """Two rounds of 60 requests at once, 6 s apart: the second opens no connection. httpx's default pool
    keeps at most 20 idle connections for 5 s, so the second round used to open every one again, with a
    TLS handshake each, as the operator did after every pause between its bursts."""

    async def scenario() -> None:
        client = await Client.connect(str(sandbox.workload_kubeconfig))
        namespace = await fresh_namespace(client, "pool")

        async def round_of(n: int) -> None:
            await asyncio.gather(*(client.request("GET", CONFIGMAPS, namespace=namespace) for _ in range(n)))

        await round_of(60)
        after_first = _sockets()
        await asyncio.sleep(6)
        await round_of(60)
        opened = _sockets() - after_first
        assert opened == set(), f"{len(opened)} connections opened again"

    asyncio.run(scenario())
