"""Kubernetes Events on the objects kapstan acts on: "no flavor fits", "nominated for nodeclaim ...".

Events are how a user finds out, with ``kubectl describe``, why a pod stays pending or a NodeClaim went
away, so they are written like client-go's recorder writes them: a core/v1 ``Event`` in the object's
namespace (``default`` for cluster-scoped objects such as Nodes), and a repeat of the same event on the
same object within ten minutes bumps the existing Event's ``count`` and ``lastTimestamp`` instead of
adding one more line to ``describe``. A reconcile that reports the same reason every few seconds therefore
costs one Event, not hundreds.

Events are best effort: ``emit`` never raises. An API failure is logged and the event dropped, because a
reconcile that did its work must not fail over the note it leaves behind.
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


def _display(meta: Object) -> str:
    name = meta.get("name", "?")
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else str(name)
