"""The e2e harness: a ``KapstanRun`` and the event loop its API clients belong to."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from kapstan.local.run import KapstanRun

T = TypeVar("T")


@dataclass
class E2E:
    run: KapstanRun
    loop: asyncio.AbstractEventLoop

    def __call__(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop the run's API clients belong to."""
        return self.loop.run_until_complete(coroutine)
