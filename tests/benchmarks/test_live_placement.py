"""bench.live's placement figure: which pods kube-scheduler bound on the Node of the claim their Nominated
Event names, from the pods and claims the bench's watches hold and the Events read through ``sample``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from bench.live import watch
from bench.live.placement import dump, summarize
from bench.live.watch import FleetWatch

from kapstan.kube.client import Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import EVENTS


def _pod(name: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def _claim(name: str, node: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"nodeName": node}}


def _nominated(pod: str, claim: str, when: str) -> dict[str, Any]:
    return {
        "involvedObject": {"name": pod},
        "message": f"Pod should schedule on: nodeclaim/{claim}",
        "firstTimestamp": when,
    }


def test_pods_are_counted_by_where_they_were_bound_against_their_last_claim() -> None:
    pods = [_pod("a", "node-1"), _pod("b", "node-2"), _pod("c"), _pod("d", "node-2"), _pod("agent", "node-1")]
    claims = [_claim("claim-1", "node-1"), _claim("claim-2", "node-2")]
    events = [
        _nominated("a", "claim-1", "2026-12-02T12:00:00Z"),
        _nominated("b", "claim-1", "2026-12-02T12:00:00Z"),
        _nominated("c", "claim-2", "2026-12-02T12:00:00Z"),
        _nominated("d", "claim-1", "2026-12-02T12:00:00Z"),
        _nominated("d", "claim-2", "2026-12-02T12:01:00Z"),  # planned again, onto claim-2
        {"involvedObject": {"name": "a"}, "message": "Pod should schedule on: node/node-9"},
    ]
    assert summarize(pods, claims, events) == {
        "planned": 4,
        "boundAsPlanned": 2,
        "boundElsewhere": 1,
        "unbound": 1,
        "replanned": 1,
    }


class _EventsOnly:
    """An API server that answers only the Nominated Events read, failing the first ``failures`` times."""

    def __init__(self, events: list[dict[str, Any]], failures: int = 0) -> None:
        self.events, self.failures, self.reads = events, failures, []

    async def request(self, method: str, resource: Resource, **kwargs: Any) -> dict[str, Any]:
        self.reads.append((method, resource.plural))
        if resource != EVENTS:
            raise AssertionError(f"{method} {resource.plural}: the watch holds these")
        if len(self.reads) <= self.failures:
            raise ApiError("GET events: ReadTimeout: timed out")
        return {"items": self.events}


def _dump(api: _EventsOnly, path: Path) -> dict[str, Any]:
    """``dump`` of pod ``a`` on claim-1's Node, as a FleetWatch holds them (never started: the stores are
    filled here), reading the Events from ``api``."""
    held = FleetWatch(api, "ns", "pool")  # type: ignore[arg-type]
    held.pods.store.upsert({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"nodeName": "node-1"}})
    held.claims.store.upsert(_claim("claim-1", "node-1"))
    return asyncio.run(dump(api, held, "ns", path))  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "SAMPLE_PAUSE", 0.0)


def test_the_dump_reads_pods_and_claims_from_the_watch_and_only_the_events_from_the_server(
    tmp_path: Path,
) -> None:
    api = _EventsOnly([_nominated("a", "claim-1", "2026-12-02T12:00:00Z")], failures=1)
    assert _dump(api, tmp_path / "placement.json") == {"planned": 1, "boundAsPlanned": 1, "replanned": 0}
    assert api.reads == [("GET", "events"), ("GET", "events")], "a failed read is tried again"
    dumped = json.loads((tmp_path / "placement.json").read_text())
    assert [pod["metadata"]["name"] for pod in dumped["pods"]] == ["a"]


def test_a_dump_whose_events_cannot_be_read_is_not_recorded(tmp_path: Path) -> None:
    api = _EventsOnly([], failures=99)
    assert _dump(api, tmp_path / "placement.json") == {}
    assert len(api.reads) == watch.SAMPLE_TRIES
