"""kapstan's requests as the API server saw them: an audit policy limited to kapstan's identity.

The operator runs as its own ServiceAccount (``identity``) so that the policy logs its requests and
nothing else (the bench's own polling, CAPI's controllers, kwok and the scheduler are all admin). Watches
are logged when they end; one still open when the log is read is not counted (a handful per run, against
thousands of requests).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "kapstan-bench"
USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"


def write_policy(path: Path, *, watch_starts: bool = False) -> Path:
    """One event per request, when its response is complete; with ``watch_starts`` also when a watch
    starts (``ResponseStarted``, which only long-running requests have), so a watch still open counts."""
    policy = {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"] if watch_starts else ["RequestReceived", "ResponseStarted"],
        "rules": [{"level": "Metadata", "users": [USER]}, {"level": "None"}],
    }
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


def cluster_admin_binding() -> dict[str, Any]:
    """kapstan's ServiceAccount may do anything: the bench measures load, not RBAC (the e2e tests do)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": SERVICE_ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
    }


@dataclass
class Requests:
    """Counts of kapstan's requests over one time window."""

    by_verb: Counter[str] = field(default_factory=Counter)
    scale_writes: int = 0
    scale_conflicts: int = 0
    evictions: int = 0
    conflicts: int = 0
    """409s on any write."""

    @property
    def total(self) -> int:
        return sum(self.by_verb.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "byVerb": dict(sorted(self.by_verb.items())),
            "scaleWrites": self.scale_writes,
            "scaleConflicts": self.scale_conflicts,
            "evictions": self.evictions,
            "conflicts": self.conflicts,
        }


def _events(log: Path, start: float, end: float) -> Iterator[tuple[float, dict[str, Any]]]:
    """kapstan's audit events of requests received in [start, end) (epoch seconds), with that time."""
    if not log.exists():
        return
    with log.open() as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("user", {}).get("username") != USER:
                continue
            received = _epoch(event["requestReceivedTimestamp"])
            if start <= received < end:
                yield received, event


def count(log: Path, start: float, end: float) -> Requests:
    """kapstan's requests received in [start, end) (epoch seconds), from a policy without watch starts."""
    found = Requests()
    for _, event in _events(log, start, end):
        ref = event.get("objectRef") or {}
        code = (event.get("responseStatus") or {}).get("code", 0)
        found.by_verb[event["verb"]] += 1
        if code == 409:
            found.conflicts += 1
        scale = ref.get("resource") == "machinedeployments" and ref.get("subresource") == "scale"
        if scale and event["verb"] in ("patch", "update"):
            found.scale_writes += 1
            # 409 (a stale resourceVersion) or 422 (a failed JSON patch test): the write lost a race.
            found.scale_conflicts += code in (409, 422)
        if ref.get("resource") == "pods" and ref.get("subresource") == "eviction" and code < 300:
            found.evictions += 1
    return found


def watches_and_lists(log: Path, start: float, end: float) -> dict[str, list[tuple[float, str]]]:
    """Each of kapstan's watches and lists in [start, end), by verb, as (when it was received, resource),
    from a policy with watch starts: a watch is logged when it starts (it may still be open) and when it
    ends, or only when it ends if it was refused (a 429), so each request is counted once by its audit ID."""
    found: dict[str, list[tuple[float, str]]] = {"watch": [], "list": []}
    seen: set[str] = set()
    for received, event in _events(log, start, end):
        verb, request = event["verb"], event.get("auditID", "")
        if verb in found and request not in seen:
            seen.add(request)
            found[verb].append((received, (event.get("objectRef") or {}).get("resource", "")))
    return found


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
