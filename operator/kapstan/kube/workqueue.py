"""A de-duplicating work queue with per-key retries, after client-go's ``workqueue``.

Controllers enqueue keys, not objects: ten changes to one object before a worker gets to it are one
reconcile of its latest state. A key being processed is never handed to a second worker; if it is added
again meanwhile, it is queued once more when the first worker calls ``done``. A failed reconcile calls
``add_rate_limited`` and waits ``Backoff.delay(failures)`` (5 ms doubling to 1000 s by default); a
successful one calls ``forget`` to reset the count.

A ready key is handed to one waiting worker, first come first served, and wakes no other: with one
shared "changed" flag every worker of a controller woke on every add, and all but one found nothing and
went back to sleep (9% of the operator's event loop at 3,000 pods, issue 14). Handing the key over, rather
than waking a worker to look for it, also means a worker coming back from ``done`` cannot take it first
and leave the woken one with nothing. One timer, not each waiter, watches the earliest delayed key.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from contextlib import suppress
from typing import Generic, TypeVar

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
        # Workers waiting in ``get``, oldest first; a future's result is the key handed over (None: shut
        # down). While anyone waits, nothing is left in ``_queue``: a ready key goes straight to a waiter.
        self._getters: deque[asyncio.Future[K | None]] = deque()
        self._timer: asyncio.Task[None] | None = None
        self._timer_due = 0.0
        self._shut_down = False

    def __len__(self) -> int:
        """Keys ready now (not those waiting for their delay, nor those being processed)."""
        return len(self._queue)

    def add(self, key: K) -> None:
        if self._shut_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready(key)

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
        if self._getters:
            self._arm_timer()

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
            self._ready(key)

    def shut_down(self) -> None:
        self._shut_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

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
        if self._shut_down:
            raise ShutDown("work queue is shut down")
        key = self.try_get()
        if key is not None:
            return key
        getter: asyncio.Future[K | None] = asyncio.get_running_loop().create_future()
        self._getters.append(getter)
        if self._waiting:
            self._arm_timer()
        try:
            handed = await getter
        except asyncio.CancelledError:
            if getter.cancelled():
                with suppress(ValueError):  # a hand-over may have skipped it out of the line already
                    self._getters.remove(getter)
            elif (handed := getter.result()) is not None:  # handed a key, cancelled before taking it
                self._processing.discard(handed)
                self._dirty.add(handed)
                self._ready(handed, first=True)
            raise
        if handed is None:
            raise ShutDown("work queue is shut down")
        return handed

    def _ready(self, key: K, *, first: bool = False) -> None:
        """``key`` (in ``_dirty``, not processing) to the longest-waiting worker, or into the queue."""
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                self._dirty.discard(key)
                self._processing.add(key)
                getter.set_result(key)
                return
        if first:
            self._queue.appendleft(key)
        else:
            self._queue.append(key)

    def _arm_timer(self) -> None:
        """Make sure a timer promotes the earliest delayed key when it is due."""
        due = self._waiting[0][0]
        if self._timer is not None and not self._timer.done():
            if self._timer_due <= due:
                return
            self._timer.cancel()
        self._timer_due = due
        self._timer = asyncio.ensure_future(self._promote_when_due(due))

    async def _promote_when_due(self, due: float) -> None:
        await self._clock.sleep(due - self._clock.now())
        self._timer = None
        self._promote_due()  # each key now due goes to one waiter
        if self._waiting and self._getters:
            self._arm_timer()

    def _promote_due(self) -> None:
        now = self._clock.now()
        while self._waiting and self._waiting[0][0] <= now:
            due, _, key = heapq.heappop(self._waiting)
            if self._due.get(key) == due:
                del self._due[key]
                self.add(key)
