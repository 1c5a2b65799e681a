"""Builders for disruption tests: NodeClaims, Nodes, pods and PDBs as the API server returns them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

T0 = "2026-11-30T10:00:00Z"


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def claim(
    name: str = "pool-a",
    *,
    pool: str = "pool",
    flavor: str = "c3-8",
    initialized: str | None = T0,
    annotations: dict[str, str] | None = None,
    created: str = T0,
    last_pod_event: str | None = None,
) -> dict[str, Any]:
    conditions = (
        [{"type": "Initialized", "status": "True", "lastTransitionTime": initialized}] if initialized else []
    )
    status: dict[str, Any] = {"nodeName": f"node-{name}", "conditions": conditions}
    if last_pod_event:
        status["lastPodEventTime"] = last_pod_event
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "labels": {
                "karpenter.sh/nodepool": pool,
                "node.kubernetes.io/instance-type": flavor,
                "topology.kubernetes.io/zone": "nova",
                "karpenter.sh/capacity-type": "on-demand",
            },
            "annotations": dict(annotations or {}),
        },
        "spec": {},
        "status": status,
    }


def node(name: str = "node-pool-a", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": dict(annotations or {})}, "spec": {}}


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: str = "ReplicaSet",
    phase: str = "Running",
    started: str = T0,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
            "ownerReferences": [{"kind": owner, "name": "owner"}],
            "creationTimestamp": started,
        },
        "spec": {"nodeName": "node-pool-a"},
        "status": {"phase": phase, "startTime": started},
    }


def pdb(name: str, match: dict[str, str], allowed: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match}, "minAvailable": 1},
        "status": {"disruptionsAllowed": allowed},
    }
