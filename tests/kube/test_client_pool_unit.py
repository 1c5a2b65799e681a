"""The client's pool holds what runs at once: requests beyond REQUEST_CONCURRENCY wait on the client,
not in httpcore's queue, whose bookkeeping costs every request a look at each connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kapstan.kube.client import POOL_LIMITS, REQUEST_CONCURRENCY, WATCH_CONNECTIONS, Client, Resource

PODS = Resource("", "v1", "pods", "Pod")


class SlowApi:
    """kr8s's call_api, answering each request once ``gate`` is set; counts requests in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0
        self.gate = asyncio.Event()

    @asynccontextmanager
    async def call_api(self, *_: Any, **__: Any) -> AsyncIterator[Any]:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await self.gate.wait()
            yield self
        finally:
            self.in_flight -= 1

    def json(self) -> dict[str, Any]:
        return {}


def test_requests_beyond_the_concurrency_wait_on_the_client() -> None:
    async def burst() -> SlowApi:
        api = SlowApi()
        client = Client(api)  # type: ignore[arg-type]  # the one call a request makes
        requests = [
            asyncio.ensure_future(client.get(PODS, f"p{i}", "ns")) for i in range(3 * REQUEST_CONCURRENCY)
        ]
        for _ in range(10):
            await asyncio.sleep(0)
        assert api.in_flight == REQUEST_CONCURRENCY
        assert client.read_only()._in_flight is client._in_flight, "one budget per connection pool"
        api.gate.set()
        await asyncio.gather(*requests)
        return api

    assert asyncio.run(burst()).most == REQUEST_CONCURRENCY


def test_the_pool_has_room_for_the_requests_and_the_watches_and_no_more() -> None:
    assert POOL_LIMITS.max_connections == REQUEST_CONCURRENCY + WATCH_CONNECTIONS
    assert POOL_LIMITS.max_keepalive_connections == POOL_LIMITS.max_connections
    assert POOL_LIMITS.keepalive_expiry == 300.0, "idle connections outlast a batch window's pause"
