"""The bench's view of the fleet, kept by watches, so a slow API server costs samples, never the run.

Listing every pod every 2 s took the 3,000-pod run down at T+229 s: on a loaded API server the GET of
3,000 pods timed out and the exception ended the bench. The claims and pods are now kept by informers
(kapstan's own: paginated list, then watch from its version, relist on 410, backoff on failures), and a
poll reads their stores; the few reads left (Deployments, Nodes, the accounting) go through ``sample``,
for which a failed read is a sample missing. The informers use the admin client, which the audit policy
leaves out, so none of this counts as kapstan's requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bench.live.observe import Fleet
from kapstan.api.wellknown import NODEPOOL
from kapstan.kube.client import Client, Object
from kapstan.kube.errors import ApiError
from kapstan.kube.informer import Informer
from kapstan.kube.kinds import NODECLAIMS, PODS

log = logging.getLogger(__name__)

T = TypeVar("T")

SAMPLE_TRIES = 3
"""Reads of one sample before it is given up as missing."""
SAMPLE_PAUSE = 2.0
"""Seconds between those reads."""


class FleetWatch:
    """The run's NodeClaims and pods, as the watches last showed them."""

    def __init__(self, client: Client, namespace: str, pool: str) -> None:
        self.claims = Informer(client, NODECLAIMS, label_selector=f"{NODEPOOL}={pool}")
        self.pods = Informer(client, PODS, namespace=namespace)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> FleetWatch:
        self._tasks = [asyncio.create_task(informer.run()) for informer in (self.claims, self.pods)]
        await asyncio.gather(self.claims.wait_synced(), self.pods.wait_synced())
        return self

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def fleet(self) -> Fleet:
        return Fleet(_live(self.claims.store.objects()), _live(self.pods.store.objects()))


async def sample(what: str, read: Callable[[], Awaitable[T]]) -> T | None:
    """``read()``, tried ``SAMPLE_TRIES`` times on an API error; None (a sample missing) if every try
    failed, with one log line, so a slow API server thins the figures instead of ending the run."""
    for attempt in range(1, SAMPLE_TRIES + 1):
        try:
            return await read()
        except ApiError as error:
            log.warning("reading %s failed (try %d of %d): %s", what, attempt, SAMPLE_TRIES, error)
            if attempt < SAMPLE_TRIES:
                await asyncio.sleep(SAMPLE_PAUSE)
    return None


def _live(objects: list[Object]) -> list[Object]:
    return [obj for obj in objects if not obj["metadata"].get("deletionTimestamp")]
