"""Injectable time: backoffs, delayed retries and lease expiry read a ``Clock``, so tests advance a
``FakeClock`` instead of sleeping (docs/architecture.md#injected-time). Timeouts measured from timestamps
the API server wrote (``creationTimestamp``, a condition's ``lastTransitionTime``) read the same clock's
``wall``."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds; only differences mean anything."""
        ...

    def wall(self) -> datetime:
        """The time of day in UTC, to compare with timestamps the API server wrote."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()


FAKE_WALL_START = datetime(2026, 1, 1, tzinfo=UTC)
"""Where a ``FakeClock``'s time of day starts: a whole second, as API timestamps are."""


class FakeClock:
    """Time stands still until ``advance``; sleepers wake, in deadline order, once it has passed."""

    def __init__(self, start: float = 1000.0, wall_start: datetime = FAKE_WALL_START) -> None:
        self._now = start
        self._start = start
        self._wall_start = wall_start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        """``wall_start`` moved on by as much as ``advance`` has moved the clock."""
        return self._wall_start + timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        await future

    def advance(self, seconds: float) -> None:
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleepers(self) -> int:
        """How many coroutines are waiting on this clock (tests wait for a loop to reach its sleep)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())
