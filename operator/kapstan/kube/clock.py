"""Injectable time: backoffs, delayed retries and lease expiry read a ``Clock``, so tests advance a
``FakeClock`` instead of sleeping (docs/architecture.md#injected-time). Timeouts measured from timestamps
the API server wrote (``creationTimestamp``, a condition's ``lastTransitionTime``) read the same clock's
``wall``."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
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

    async def sleep_until(self, when: float) -> None:
        """Until ``now()`` reaches ``when``: unlike ``sleep(when - now())``, time that passes between
        reading the clock and sleeping is not slept again (a thread sleeping on another's clock)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def sleep_until(self, when: float) -> None:
        await asyncio.sleep(max(0.0, when - time.monotonic()))


SYSTEM_CLOCK = SystemClock()


FAKE_WALL_START = datetime(2026, 1, 1, tzinfo=UTC)
"""Where a ``FakeClock``'s time of day starts: a whole second, as API timestamps are."""


class FakeClock:
    """Time stands still until ``advance``; sleepers wake, in deadline order, once it has passed.

    Sleepers may wait on another thread's event loop (the leader's renewal thread): each is woken on
    its own loop, so a test advancing the clock from its loop drives both."""

    def __init__(self, start: float = 1000.0, wall_start: datetime = FAKE_WALL_START) -> None:
        self._now = start
        self._start = start
        self._wall_start = wall_start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._lock = threading.Lock()  # the heap is shared by every thread sleeping on this clock

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        """``wall_start`` moved on by as much as ``advance`` has moved the clock."""
        return self._wall_start + timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        await self._sleep(seconds, relative=True)

    async def sleep_until(self, when: float) -> None:
        await self._sleep(when, relative=False)

    async def _sleep(self, until: float, *, relative: bool) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:  # reading the time and joining the sleepers is one step for advance
            due = self._now + until if relative else until
            parked = due > self._now
            if parked:
                heapq.heappush(self._sleepers, (due, next(self._order), future))
        if parked:
            await future
        else:
            await asyncio.sleep(0)  # due already: still let the others run, as a sleep does

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            due = []
            while self._sleepers and self._sleepers[0][0] <= self._now:
                due.append(heapq.heappop(self._sleepers)[2])
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for future in due:
            loop = future.get_loop()
            if loop is here:
                _wake(future)
            elif not loop.is_closed():  # a sleeper left behind by a loop that has ended needs no waking
                loop.call_soon_threadsafe(_wake, future)

    @property
    def sleepers(self) -> int:
        """How many coroutines are waiting on this clock (tests wait for a loop to reach its sleep)."""
        with self._lock:
            return sum(1 for _, _, f in self._sleepers if not f.done())


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
