"""Raw requests against a real API server: conditional patches, subresources, and how errors read."""

from __future__ import annotations

import asyncio

import pytest
from kube_helpers import fresh_namespace

from kapstan.kube.client import CONFIGMAPS, Client
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox


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
