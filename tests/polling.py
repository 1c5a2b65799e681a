"""Waiting for a condition in the sandbox tests: poll until it holds or a generous deadline passes, and fail
naming what was awaited, so that no test sleeps a fixed time and hopes, or asserts the instant after a write
that a controller or CAPI answers in its own time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    what: str, check: Callable[[], Awaitable[bool]], timeout: float = 60.0, every: float = 0.2
) -> None:
    """Await ``check`` every ``every`` seconds until it is true; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(every)


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 120.0, every: float = 0.5) -> T:
    """Call ``check`` until it returns something truthy and return that; fail naming ``what`` (and the last
    value) after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
