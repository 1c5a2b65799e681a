"""The informer's list-then-watch loop against a scripted API: resume from the last version seen (bookmarks
included), and list again after 410 Gone, whether the server answers the watch request with 410 or sends it
as an ERROR event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kapstan.kube.backoff import Backoff
from kapstan.kube.client import CONFIGMAPS, Resource
from kapstan.kube.clock import FakeClock
from kapstan.kube.errors import ApiError
from kapstan.kube.informer import Informer
from kapstan.kube.store import Event


def cm(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def listing(rv: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": list(items)}


GONE = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 15 (20)"}


class ScriptedApi:
    """Answers lists and watches from scripts; a watch script may be an ApiError to raise at the request."""

    def __init__(self, lists: list[dict[str, Any]], watches: list[list[dict[str, Any]] | ApiError]) -> None:
        self.lists = lists
        self.watches = watches
        self.watched_from: list[str] = []
        self.exhausted = asyncio.Event()

    async def request(self, method: str, resource: Resource, **_: Any) -> dict[str, Any]:
        return self.lists.pop(0)

    @asynccontextmanager
    async def watch(
        self, resource: Resource, *, namespace: str | None, params: dict[str, str], read_timeout: float
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        assert params["allowWatchBookmarks"] == "true"
        self.watched_from.append(params["resourceVersion"])
        if not self.watches:
            self.exhausted.set()
            await asyncio.Event().wait()  # a quiet watch: block until cancelled
        script = self.watches.pop(0)
        if isinstance(script, ApiError):
            raise script
        yield _aiter(script)


async def _aiter(events: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for event in events:
        yield event


def run_informer(api: ScriptedApi) -> tuple[Informer, list[tuple[str, str, str]]]:
    seen: list[tuple[str, str, str]] = []

    def record(event: Event) -> None:
        meta = event.object["metadata"]
        seen.append((event.type, meta["name"], meta["resourceVersion"]))

    informer = Informer(
        api,  # type: ignore[arg-type]
        CONFIGMAPS,
        namespace="ns",
        handler=record,
        backoff=Backoff(initial=0.0),
        clock=FakeClock(),
    )

    async def scenario() -> None:
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(api.exhausted.wait(), 5.0)
        task.cancel()

    asyncio.run(scenario())
    return informer, seen


def test_resumes_from_bookmarks_and_relists_after_a_gone_event() -> None:
    api = ScriptedApi(
        lists=[listing("10", cm("a", "5")), listing("30", cm("b", "12"), cm("c", "25"))],
        watches=[
            [
                {"type": "ADDED", "object": cm("b", "11")},
                {"type": "MODIFIED", "object": cm("b", "12")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
            ],
            [{"type": "ERROR", "object": GONE}],
        ],
    )
    informer, seen = run_informer(api)
    assert api.watched_from == ["10", "15", "30"]
    assert seen == [
        ("ADDED", "a", "5"),
        ("ADDED", "b", "11"),
        ("MODIFIED", "b", "12"),
        # the relist: b unchanged (no event), c new, a deleted while we were not watching
        ("ADDED", "c", "25"),
        ("DELETED", "a", "5"),
    ]
    assert sorted(informer.store.keys()) == ["ns/b", "ns/c"]
    assert informer.has_synced


def test_relists_when_the_watch_request_is_answered_410() -> None:
    api = ScriptedApi(
        lists=[listing("10", cm("a", "5")), listing("40", cm("a", "33"))],
        watches=[ApiError("watching configmaps in ns: too old", status=410)],
    )
    informer, seen = run_informer(api)
    assert api.watched_from == ["10", "40"]
    assert seen == [("ADDED", "a", "5"), ("MODIFIED", "a", "33")]
    assert informer.resource_version == "40"


def test_other_errors_retry_the_watch_from_the_same_version() -> None:
    api = ScriptedApi(
        lists=[listing("10")],
        watches=[
            ApiError("watching configmaps in ns: connection reset"),
            [{"type": "ADDED", "object": cm("a", "11")}],
        ],
    )
    _, seen = run_informer(api)
    assert api.watched_from == ["10", "10", "11"]
    assert seen == [("ADDED", "a", "11")]


def test_a_watch_closed_at_once_without_events_backs_off() -> None:
    async def scenario() -> None:
        api = ScriptedApi(lists=[listing("10")], watches=[[], [{"type": "ADDED", "object": cm("a", "11")}]])
        clock = FakeClock()
        informer = Informer(
            api,  # type: ignore[arg-type]
            CONFIGMAPS,
            namespace="ns",
            backoff=Backoff(initial=5.0),
            clock=clock,
        )
        task = asyncio.create_task(informer.run())
        for _ in range(50):
            await asyncio.sleep(0)
        assert api.watched_from == ["10"] and clock.sleepers == 1, "must wait before watching again"
        clock.advance(5.0)
        await asyncio.wait_for(api.exhausted.wait(), 5.0)
        task.cancel()
        assert api.watched_from == ["10", "10", "11"]

    asyncio.run(scenario())
