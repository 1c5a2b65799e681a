"""The e2e harness: a ``KapstanRun`` and the event loop its API clients belong to (the e2e and chaos
tests' fixtures are both made by ``harness``)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from kapstan.local import Sandbox
from kapstan.local.run import KapstanRun
from kapstan.local.timeline import format_entry

T = TypeVar("T")


@dataclass
class E2E:
    run: KapstanRun
    loop: asyncio.AbstractEventLoop

    def __call__(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop the run's API clients belong to."""
        return self.loop.run_until_complete(coroutine)


def harness(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    """A ``KapstanRun`` named after the test, connected, its timeline printed as it happens, cleaned up
    afterwards whatever happened."""
    prefix = request.node.name.removeprefix("test_")[:24].rstrip("_").replace("_", "-")
    run = KapstanRun(sandbox, prefix, on_entry=lambda seconds, text: print(format_entry(seconds, text)))
    made = E2E(run, asyncio.new_event_loop())
    made(run.connect())
    try:
        yield made
    finally:
        made(run.cleanup())
        made.loop.close()
