"""``EventRecorder.note``: hot-path Events cost one write per object and reason per window, off the
caller's path."""

from __future__ import annotations

import asyncio
from typing import Any

from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.clock import FakeClock
from kapstan.kube.events import SERIES_INTERVAL, EventRecorder


class RecordingApi:
    """Answers Event creates and patches and records them; ``gate`` holds every write until set."""

    def __init__(self) -> None:
        self.creates: list[Object] = []
        self.patches: list[Object] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def create(self, resource: Resource, body: Object) -> Object:
        await self.gate.wait()
        self.creates.append(body)
        return {"metadata": {"namespace": body["metadata"]["namespace"], "name": body["metadata"]["name"]}}

    async def patch(self, resource: Resource, name: str, patch: Object, **_: Any) -> Object:
        await self.gate.wait()
        self.patches.append(patch)
        return {}


def _pod(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name}}


def _recorder(api: RecordingApi, clock: FakeClock) -> EventRecorder:
    client: Client = api  # type: ignore[assignment]  # the two calls a recorder makes
    return EventRecorder(client, clock=clock)


def test_a_pod_noted_every_batch_is_one_event_per_reason() -> None:
    api, clock = RecordingApi(), FakeClock()
    recorder = _recorder(api, clock)

    async def batches() -> None:
        for batch in range(20):
            for pod in ("a", "b"):
                recorder.note(_pod(pod), "Normal", "Nominated", f"Pod should schedule on: nodeclaim/c{batch}")
            recorder.note(_pod("a"), "Warning", "FailedScheduling", "no flavor fits")
            await recorder.flush()
            clock.advance(5)

    asyncio.run(batches())
    assert sorted((e["involvedObject"]["name"], e["reason"]) for e in api.creates) == [
        ("a", "FailedScheduling"),
        ("a", "Nominated"),
        ("b", "Nominated"),
    ]
    assert api.patches == [], "100 s of repeats are counted, not written"


def test_repeats_reach_the_series_once_per_interval() -> None:
    api, clock = RecordingApi(), FakeClock()
    recorder = _recorder(api, clock)

    async def repeats() -> None:
        for _ in range(3):
            recorder.note(_pod("a"), "Normal", "Nominated", "x")
            await recorder.flush()
            clock.advance(SERIES_INTERVAL / 2)

    asyncio.run(repeats())
    assert [e["count"] for e in api.creates] == [1]
    assert [p["series"]["count"] for p in api.patches] == [3]


def test_note_does_not_wait_for_the_write() -> None:
    api, clock = RecordingApi(), FakeClock()
    recorder = _recorder(api, clock)
    api.gate.clear()

    async def noted_while_writes_hang() -> int:
        for pod in range(100):
            recorder.note(_pod(str(pod)), "Normal", "Nominated", "x")
        await asyncio.sleep(0)
        written = len(api.creates)
        api.gate.set()
        await recorder.flush()
        return written

    assert asyncio.run(noted_while_writes_hang()) == 0
    assert len(api.creates) == 100
