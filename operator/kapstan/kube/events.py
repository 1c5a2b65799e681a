"""Kubernetes Events on the objects kapstan acts on: "no flavor fits", "nominated for nodeclaim ...".

Events are how a user finds out, with ``kubectl describe``, why a pod stays pending or a NodeClaim went
away, so they are written like client-go's recorder writes them: a core/v1 ``Event`` in the object's
namespace (``default`` for cluster-scoped objects such as Nodes), and a repeat of the same event on the
same object within ten minutes bumps the existing Event's ``count`` and ``lastTimestamp`` instead of
adding one more line to ``describe``. A reconcile that reports the same reason every few seconds therefore
costs one Event, not hundreds.

Events are best effort: ``emit`` never raises. An API failure is logged and the event dropped, because a
reconcile that did its work must not fail over the note it leaves behind.

Events about pods in a batch (``Nominated``, ``FailedScheduling``) go through ``note`` instead, which never
waits and never writes more than client-go's recorder would: one Event per pod and reason per window,
written in the background by a few tasks; repeats within the window are counted in memory and reach the
Event's ``series`` at most once per ``SERIES_INTERVAL`` (client-go's spam filter lets one object's
repeats through at about that rate). A batch of thousands of pods re-planned every few seconds thus
costs one write per pod, not one per pod per batch, and the provisioner does not wait for any of them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from cachetools import TTLCache

from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError

EVENTS = Resource("", "v1", "events", "Event")

EventType = Literal["Normal", "Warning"]

# client-go keeps 4096 recent events for aggregation and forgets a key after ten minutes of silence.
AGGREGATION_WINDOW = 600.0
CACHE_SIZE = 4096

# A noted repeat is written (into the Event's series) at most this often per object and reason.
SERIES_INTERVAL = 300.0
NOTE_CACHE_SIZE = 16384
"""Objects and reasons whose noted Events are remembered: a fleet's pending pods, twice over."""
NOTE_WRITERS = 8
"""Background writes in flight at once."""

# Cluster-scoped objects have no namespace of their own; the API server accepts their Events here.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"

_MAX_NAME = 253

log = logging.getLogger(__name__)

_Key = tuple[str, str, str, str]


@dataclass
class _Recorded:
    namespace: str
    name: str
    count: int


@dataclass
class _Noted:
    """An object's Event of one reason within the window: what was seen, what was written."""

    obj: Object
    type: EventType
    reason: str
    message: str
    count: int = 1
    written: int = 0
    """The count the API server has (0: not created yet)."""
    written_at: float = 0.0
    event: tuple[str, str] | None = None
    """(namespace, name) of the Event once created."""
    queued: bool = False


class EventRecorder:
    """Writes Events for one component; share one per cluster client, it is safe across tasks."""

    def __init__(self, client: Client, component: str = "kapstan", *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._client = client
        self.component = component
        self._recent: TTLCache[_Key, _Recorded] = TTLCache(
            maxsize=CACHE_SIZE, ttl=AGGREGATION_WINDOW, timer=clock.now
        )
        # Two tasks reporting the same thing at once would otherwise both create an Event.
        self._locks: weakref.WeakValueDictionary[_Key, asyncio.Lock] = weakref.WeakValueDictionary()
        self._clock = clock
        self._noted: TTLCache[tuple[str, str], _Noted] = TTLCache(
            maxsize=NOTE_CACHE_SIZE, ttl=AGGREGATION_WINDOW, timer=clock.now
        )
        self._to_write: asyncio.Queue[_Noted] | None = None
        self._writers: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def note(self, obj: Object, type: EventType, reason: str, message: str) -> None:
        """Record ``reason`` on ``obj`` without waiting: the first time in the window it is written in the
        background; a repeat only counts, and the count is written at most once per SERIES_INTERVAL."""
        key = (obj.get("metadata", {}).get("uid", ""), reason)
        noted = self._noted.get(key)
        if noted is None:
            noted = _Noted(obj, type, reason, message)
            self._noted[key] = noted
        else:
            noted.count += 1
            noted.message = message
            self._noted[key] = noted  # a steady repeat keeps its window open, as emit's does
            if noted.written and self._clock.now() - noted.written_at < SERIES_INTERVAL:
                return
        if not noted.queued:
            noted.queued = True
            self._queue().put_nowait(noted)

    async def flush(self) -> None:
        """Wait until every noted Event queued so far is written (tests, and shutdown)."""
        if self._to_write is not None:
            await self._to_write.join()

    def _queue(self) -> asyncio.Queue[_Noted]:
        loop = asyncio.get_running_loop()
        if self._to_write is None or self._loop is not loop:  # a recorder outlives a test's event loop
            self._loop = loop
            self._to_write = asyncio.Queue()
            self._writers = [asyncio.ensure_future(self._write_noted()) for _ in range(NOTE_WRITERS)]
        return self._to_write

    async def _write_noted(self) -> None:
        assert self._to_write is not None
        while True:
            noted = await self._to_write.get()
            noted.queued = False
            try:
                await self._write(noted)
            except ApiError as error:
                log.warning(
                    "dropping event %s on %s: %s", noted.reason, _display(noted.obj["metadata"]), error
                )
            except Exception:
                log.warning("dropping event %s", noted.reason, exc_info=True)
            finally:
                self._to_write.task_done()

    async def _write(self, noted: _Noted) -> None:
        count, now = noted.count, _timestamp()
        if noted.event is not None:
            namespace, name = noted.event
            series = {"count": count, "lastObservedTime": _micro_timestamp()}
            patch = {"count": count, "lastTimestamp": now, "message": noted.message, "series": series}
            try:
                await self._client.patch(EVENTS, name, patch, namespace=namespace)
            except ApiError as error:
                if not error.not_found:  # deleted after the server's --event-ttl: start a new one
                    raise
            else:
                noted.written, noted.written_at = count, self._clock.now()
                return
        body = self._event(noted.obj, noted.type, noted.reason, noted.message, now)
        body["count"] = count
        created = await self._client.create(EVENTS, body)
        noted.event = (created["metadata"]["namespace"], created["metadata"]["name"])
        noted.written, noted.written_at = count, self._clock.now()

    async def emit(self, obj: Object, type: EventType, reason: str, message: str) -> None:
        """Record ``reason``/``message`` on ``obj`` (a full object with metadata, apiVersion and kind)."""
        meta = obj.get("metadata", {})
        what = f"event {reason} on {obj.get('kind', 'object')} {_display(meta)}"
        try:
            key: _Key = (meta["uid"], type, reason, message)
            lock = self._locks.setdefault(key, asyncio.Lock())
            async with lock:
                await self._emit(key, obj, type, reason, message)
        except ApiError as error:
            log.warning("dropping %s: %s", what, error)
        except Exception:
            # A malformed object is a bug worth a traceback, but still not worth failing the caller.
            log.warning("dropping %s", what, exc_info=True)

    async def _emit(self, key: _Key, obj: Object, type: EventType, reason: str, message: str) -> None:
        now = _timestamp()
        recorded = self._recent.get(key)
        if recorded is not None:
            try:
                await self._client.patch(
                    EVENTS,
                    recorded.name,
                    {"count": recorded.count + 1, "lastTimestamp": now},
                    namespace=recorded.namespace,
                )
            except ApiError as error:
                # The API server deletes Events after its --event-ttl (1 h by default): start a new one.
                if not error.not_found:
                    raise
            else:
                recorded.count += 1
                # Re-inserting restarts the window, so a steady repeat keeps aggregating into one Event.
                self._recent[key] = recorded
                return
        body = self._event(obj, type, reason, message, now)
        created = await self._client.create(EVENTS, body)
        self._recent[key] = _Recorded(
            namespace=created["metadata"]["namespace"], name=created["metadata"]["name"], count=1
        )

    def _event(self, obj: Object, type: EventType, reason: str, message: str, now: str) -> Object:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or CLUSTER_SCOPED_EVENT_NAMESPACE
        involved = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta["uid"],
            "resourceVersion": meta.get("resourceVersion"),
        }
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": _event_name(meta["name"]), "namespace": namespace},
            "involvedObject": {k: v for k, v in involved.items() if v},
            "type": type,
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }


async def list_events(client: Client, obj: Object) -> list[Object]:
    """The Events recorded on ``obj`` (matched by uid), oldest first; for tests and diagnostics."""
    meta = obj["metadata"]
    namespace = meta.get("namespace") or CLUSTER_SCOPED_EVENT_NAMESPACE
    listed = await client.request(
        "GET", EVENTS, namespace=namespace, params={"fieldSelector": f"involvedObject.uid={meta['uid']}"}
    )
    items: list[Object] = listed.get("items", [])
    return sorted(items, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))


def _event_name(object_name: str) -> str:
    # client-go's scheme: the object's name and the current time in hex nanoseconds, unique enough.
    suffix = f".{time.time_ns():x}"
    return object_name[: _MAX_NAME - len(suffix)] + suffix


def _timestamp() -> str:
    # Event timestamps are metav1.Time: RFC 3339 at whole seconds.
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_timestamp() -> str:
    # EventSeries.lastObservedTime is a metav1.MicroTime.
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _display(meta: Object) -> str:
    name = meta.get("name", "?")
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else str(name)
