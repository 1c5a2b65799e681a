"""bench.live.audit's count of kapstan's watches and lists, on a hand-written audit log (what chaos
scenario 5 bounds after a kube-apiserver restart)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.live import audit

T0 = 1_700_000_000.0


def _event(request: str, verb: str, stage: str, seconds: float, resource: str, user: str = audit.USER) -> str:
    stamp = f"2023-11-14T22:13:{20 + seconds:09.6f}Z"  # T0 is 22:13:20 UTC
    return json.dumps(
        {
            "auditID": request,
            "stage": stage,
            "verb": verb,
            "user": {"username": user},
            "objectRef": {"resource": resource},
            "requestReceivedTimestamp": stamp,
        }
    )


def test_each_watch_counts_once_whether_open_ended_or_refused(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    lines = [
        _event("w1", "watch", "ResponseStarted", 1.0, "pods"),
        _event("w1", "watch", "ResponseComplete", 1.0, "pods"),  # the same watch, ended
        _event("w2", "watch", "ResponseStarted", 2.0, "nodes"),  # still open when the log is read
        _event("w3", "watch", "ResponseComplete", 3.0, "pods"),  # refused (429): never started
        _event("l1", "list", "ResponseComplete", 4.0, "machines"),
        _event("g1", "get", "ResponseComplete", 4.5, "machines"),
        _event("x1", "watch", "ResponseStarted", 5.0, "pods", user="admin"),  # someone else's
        _event("late", "list", "ResponseComplete", 30.0, "machines"),  # after the window
    ]
    log.write_text("\n".join(lines) + "\n")
    found = audit.watches_and_lists(log, T0, T0 + 10.0)
    assert [resource for _, resource in found["watch"]] == ["pods", "nodes", "pods"]
    assert found["list"] == [(T0 + 4.0, "machines")]
