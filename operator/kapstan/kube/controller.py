"""The loop every kapstan controller runs: informer events become keys, workers reconcile keys.

A reconcile reads the current state from informer stores by key, so it does not matter how many events led to
it. It returns ``Result(requeue_after=N)`` when it expects to be needed again in N seconds (a launch timeout,
a batch window: expected, so data: docs/architecture.md#typed-failures), or raises when it failed: then the
key is retried with per-key exponential backoff, and a later success resets the backoff (capped at a few
seconds while the API server does not answer: the object did nothing wrong). The queue guarantees
that one key is never reconciled by two workers at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kapstan.kube.backoff import Backoff
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError
from kapstan.kube.store import Event, object_key
from kapstan.kube.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

TRANSIENT_CAP = 5.0
"""The longest a key backs off while the API server does not answer (``ApiError.transient``)."""


@dataclass(frozen=True)
class Result:
    """What a successful reconcile asks for: nothing, or another look in ``requeue_after`` seconds."""

    requeue_after: float | None = None


Reconcile = Callable[[str], Awaitable[Result]]


class Controller:
    def __init__(
        self,
        name: str,
        reconcile: Reconcile,
        *,
        workers: int = 1,
        backoff: Backoff | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.name = name
        self.queue: WorkQueue[str] = WorkQueue(clock=clock, backoff=backoff)
        self._reconcile = reconcile
        self._workers = workers

    def enqueue(self, event: Event) -> None:
        """An informer handler that queues the changed object's key."""
        self.queue.add(object_key(event.object))

    async def run(self) -> None:
        """Run the workers until cancelled; the queue is shut down on the way out."""
        try:
            await asyncio.gather(*(self._work() for _ in range(self._workers)))
        finally:
            self.queue.shut_down()

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.process(key)
            finally:
                self.queue.done(key)

    async def process(self, key: str) -> None:
        """Reconcile one key and schedule what comes next for it."""
        try:
            result = await self._reconcile(key)
        except asyncio.CancelledError:
            raise
        except ApiError as error:
            if error.conflict:
                # The object changed since the cache showed it (a kubelet's or CAPI's status write, most
                # often): the reconcile reads it again, soon. Routine under optimistic locking, so one line
                # and no traceback; the backoff still grows if the same key keeps losing the race.
                log.info("%s: reconciling %s: %s; reading it again", self.name, key, error)
                self.queue.add_rate_limited(key, cap=TRANSIENT_CAP)
                return
            if not error.transient:
                self._failed(key)
                return
            # The API server is away or shedding load: the key waits for it to come back, which is no
            # failure of the object's, so it backs off no longer than TRANSIENT_CAP (client-go's 1000 s
            # would leave a claim waiting minutes after a restart of a few seconds) and logs one line.
            log.warning("%s: reconciling %s: %s; trying again", self.name, key, error)
            self.queue.add_rate_limited(key, cap=TRANSIENT_CAP)
            return
        except Exception:
            self._failed(key)
            return
        self.queue.forget(key)
        if result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)

    def _failed(self, key: str) -> None:
        retries = self.queue.retries(key)
        log.exception("%s: reconciling %s failed (retry %d)", self.name, key, retries + 1)
        self.queue.add_rate_limited(key)
