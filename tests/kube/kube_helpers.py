"""Helpers shared by the sandbox tests: a fresh namespace and polling on the event loop."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

from kapstan.kube.client import Client, Resource

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
_counter = itertools.count()


async def fresh_namespace(client: Client, prefix: str) -> str:
    name = f"{prefix}-{int(time.time())}-{next(_counter)}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    return name


async def eventually(what: str, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)
