"""A de-duplicating work queue with per-key retries, after client-go's ``workqueue``.

Controllers enqueue keys, not objects: ten changes to one object before a worker gets to it are one
reconcile of its latest state. A key being processed is never handed to a second worker; if it is added
again meanwhile, it is queued once more when the first worker calls ``done``. A failed reconcile calls
``add_rate_limited`` and waits ``Backoff.delay(failures)`` (5 ms doubling to 1000 s by default); a
successful one calls ``forget`` to reset the count.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from kapstan.kube.backoff import Backoff
from kapstan.kube.clock import SYSTEM_CLOCK, Clock

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """``get`` was called, or was waiting, on a queue that has been shut down."""


class WorkQueue(Generic[K]):
    def __init__(self, *, clock: Clock = SYSTEM_CLOCK, backoff: Backoff | None = None) -> None:
        self._clock = clock
        self._backoff = backoff or Backoff()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()  # queued, or to be queued again when its worker is done
        self._processing: set[K] = set()
        self._waiting: list[tuple[float, int, K]] = []  # (due, tie-break, key), a heap
        self._due: dict[K, float] = {}  # each waiting key's earliest due time; other heap entries are stale
        self._order = itertools.count()
        self._failures: dict[K, int] = {}
        self._changed = asyncio.Event()
        self._shut_down = False

    def __len__(self) -> int:
        """Keys ready now (not those waiting for their delay, nor those being processed)."""
        return len(self._queue)

    def add(self, key: K) -> None:
        if self._shut_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._changed.set()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        due = self._clock.now() + delay
        # As client-go does, a key already waiting keeps its earlier time: retries do not pile up.
        earlier = self._due.get(key)
        if self._shut_down or (earlier is not None and earlier <= due):
            return
        self._due[key] = due
        heapq.heappush(self._waiting, (due, next(self._order), key))
        self._changed.set()

    def add_rate_limited(self, key: K, *, cap: float | None = None) -> None:
        """Back ``key`` off by one more failure; with ``cap``, never for longer than that."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = self._backoff.delay(failures)
        self.add_after(key, delay if cap is None else min(delay, cap))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def retries(self, key: K) -> int:
        return self._failures.get(key, 0)

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._changed.set()

    def shut_down(self) -> None:
        self._shut_down = True
        self._changed.set()

    def try_get(self) -> K | None:
        """The next ready key, now marked as processing, or None."""
        self._promote_due()
        if not self._queue:
            return None
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    async def get(self) -> K:
        """Wait for the next ready key; raises ``ShutDown`` once the queue is shut down."""
        while True:
            if self._shut_down:
                raise ShutDown("work queue is shut down")
            key = self.try_get()
            if key is not None:
                return key
            self._changed.clear()
            await self._wait(self._waiting[0][0] - self._clock.now() if self._waiting else None)

    async def _wait(self, timeout: float | None) -> None:
        """Until something is added, or the earliest delayed key is due, whichever comes first."""
        changed = asyncio.ensure_future(self._changed.wait())
        waiters: set[asyncio.Future[Any]] = {changed}
        if timeout is not None:
            waiters.add(asyncio.ensure_future(self._clock.sleep(timeout)))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def _promote_due(self) -> None:
        now = self._clock.now()
        while self._waiting and self._waiting[0][0] <= now:
            due, _, key = heapq.heappop(self._waiting)
            if self._due.get(key) == due:
                del self._due[key]
                self.add(key)
