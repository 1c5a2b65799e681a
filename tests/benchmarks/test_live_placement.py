"""bench.live's placement figure: which pods kube-scheduler bound on the Node of the claim their Nominated
Event names."""

from __future__ import annotations

from typing import Any

from bench.live.placement import summarize


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
