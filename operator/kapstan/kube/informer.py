"""Keep a ``Store`` equal to the server's state of one kind: list, then watch from the list's version.

kr8s's own ``watch`` restarts from scratch when the server ends the stream and does not handle 410 Gone,
so an informer built on it either misses changes or replays everything. This one does what client-go's
reflector does: a paginated list gives the objects and a resourceVersion; a watch from that version with
bookmarks (``allowWatchBookmarks``) moves the version forward even when nothing we watch changes; when the
server ends the watch (``timeoutSeconds``, a restart) we watch again from the last version seen; when the
server answers 410 Gone (that version was compacted away) we list again and the store emits only the
differences. Failures back off exponentially; a watch that ran cleanly resets the backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from kapstan.kube.backoff import Backoff
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError, from_status
from kapstan.kube.store import Event, Indexer, Store

log = logging.getLogger(__name__)

Handler = Callable[[Event], None]

# client-go's reflector backs off from 800 ms to 30 s between failed lists or watches.
RECONNECT_BACKOFF = Backoff(initial=0.8, maximum=30.0)
SHORT_WATCH = 1.0  # seconds


class Informer:
    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        indexers: Mapping[str, Indexer] | None = None,
        handler: Handler | None = None,
        watch_timeout: int = 300,
        page_size: int = 500,
        backoff: Backoff = RECONNECT_BACKOFF,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.store = Store(indexers)
        self.resource_version = ""
        self._selector = {"labelSelector": label_selector} if label_selector else {}
        self._handlers: list[Handler] = [handler] if handler is not None else []
        self._watch_timeout = watch_timeout
        self._page_size = page_size
        self._backoff = backoff
        self._clock = clock
        self._failures = 0
        self._synced = asyncio.Event()

    @property
    def has_synced(self) -> bool:
        """True once the first list is in the store: only then may controllers trust its absences."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler`` for every change from now on (several controllers may watch one kind)."""
        self._handlers.append(handler)

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                if not self.resource_version:
                    await self.relist()
                started = self._clock.now()
                # A watch that ends at once with nothing in it is a server in trouble, not a timeout:
                # reconnecting right away would spin (client-go treats it the same way).
                if await self.watch_once() or self._clock.now() - started >= SHORT_WATCH:
                    self._failures = 0
                    continue
                log.warning("%s: the server closed the watch at once", self._what)
            except ApiError as error:
                if error.gone:
                    log.info("%s: %s; listing again", self._what, error)
                    self.resource_version = ""
                else:
                    log.warning("%s: %s", self._what, error)
            delay = self._backoff.delay(self._failures)
            self._failures += 1
            await self._clock.sleep(delay)

    async def relist(self) -> None:
        """Replace the store with a fresh, paginated list and remember its resourceVersion."""
        items: list[Object] = []
        params = {**self._selector, "limit": str(self._page_size)}
        while True:
            page = await self.client.request("GET", self.resource, namespace=self.namespace, params=params)
            kind = self.resource.kind
            for item in page.get("items", []):
                # List items come without apiVersion and kind; watch events have them. Make them alike.
                item.setdefault("apiVersion", self.resource.api_version)
                item.setdefault("kind", kind)
                items.append(item)
            cont = page["metadata"].get("continue")
            if not cont:
                break
            params = {**params, "continue": cont}
        self._emit(self.store.replace(items))
        self.resource_version = page["metadata"]["resourceVersion"]
        self._synced.set()

    async def watch_once(self) -> int:
        """One watch from ``resource_version`` until the server closes it; returns how many events came.

        Raises ``ApiError``, with ``gone`` set when the version is too old to watch from.
        """
        params = {
            **self._selector,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self._watch_timeout),
        }
        # The server ends the stream after timeoutSeconds; a read that waits much longer means it is gone.
        read_timeout = self._watch_timeout + 30.0
        async with self.client.watch(
            self.resource, namespace=self.namespace, params=params, read_timeout=read_timeout
        ) as events:
            count = 0
            async for event in events:
                self.handle(event)
                count += 1
        return count

    def handle(self, event: Object) -> None:
        """Apply one watch event to the store and advance ``resource_version``."""
        kind, obj = event.get("type"), event.get("object", {})
        if kind == "ERROR":
            raise from_status(self._what, obj)
        rv = obj.get("metadata", {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            self._emit([self.store.upsert(obj)])
        elif kind == "DELETED":
            self._emit([self.store.delete(obj)])
        elif kind != "BOOKMARK":
            log.warning("%s: ignoring event of type %r", self._what, kind)
            return
        if rv:
            self.resource_version = rv

    def _emit(self, events: list[Event]) -> None:
        for event in events:
            for handler in self._handlers:
                handler(event)

    @property
    def _what(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"informer for {self.resource.plural}{where}"
