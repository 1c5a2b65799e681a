"""``Client.read_only()`` refuses every verb but GET before anything is sent (the what-if commands rely on
it to write nothing even if a write path is reached by mistake)."""

from __future__ import annotations

import asyncio

import pytest

from kapstan.kube.client import CONFIGMAPS, ReadOnlyClient
from kapstan.kube.errors import ApiError


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_writes_are_refused_without_a_request(method: str) -> None:
    client = ReadOnlyClient(api=None)  # type: ignore[arg-type]  # no connection: nothing may be sent
    with pytest.raises(ApiError, match=f"{method} configmaps: refused, this client only reads"):
        asyncio.run(client.request(method, CONFIGMAPS, namespace="default", name="x", body={}))


def test_the_convenience_writes_go_through_the_refusal() -> None:
    client = ReadOnlyClient(api=None)  # type: ignore[arg-type]
    with pytest.raises(ApiError, match="refused"):
        asyncio.run(client.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": "default"}}))
    with pytest.raises(ApiError, match="refused"):
        asyncio.run(client.patch(CONFIGMAPS, "x", {"data": {}}, namespace="default"))
