"""The Rust engine: the snapshot goes to `kapstan._core` as JSON once, the plan comes back as JSON.

Maps whose order matters (a pod's requests, labels) keep their order in the JSON objects, so the Rust
side sees them in the same order the Python engine does and words its reasons identically. The Rust
side rejects a field it does not know and one that is missing (`rust/src/solver/model/`), so the JSON
carries exactly what the solver reads: the few snapshot fields that only the controllers use stay here.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import orjson

from kapstan import _core
from kapstan.scheduling.model import Node, NodePool, Plan, PlannedNodeClaim, Snapshot

ENGINE = "rust"

NOT_FOR_THE_SOLVER: dict[type, frozenset[str]] = {
    # Already resolved into each pod's affinity terms by kapstan.snapshot.
    Snapshot: frozenset({"namespace_labels"}),
    # Placement ignores startup taints (Karpenter's rule); the NodeClaim manifest and the peers need them.
    NodePool: frozenset({"startup_taints"}),
    # Which pool a node counts against: consolidation's bookkeeping, not a placement rule.
    Node: frozenset({"node_pool"}),
}
"""Snapshot fields neither engine reads, left out of the JSON."""


def _solver_fields(obj: Any) -> dict[str, Any]:
    left_out = NOT_FOR_THE_SOLVER[type(obj)]
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name not in left_out}


def encode(snapshot: Snapshot) -> bytes:
    """The snapshot as JSON, straight from the dataclasses (orjson keeps mapping order, which the Rust
    side reads back in order), without the fields in `NOT_FOR_THE_SOLVER`."""
    payload = _solver_fields(snapshot)
    payload["node_pools"] = [_solver_fields(pool) for pool in snapshot.node_pools]
    payload["nodes"] = [_solver_fields(node) for node in snapshot.nodes]
    return orjson.dumps(payload)


def decode(text: str, seconds: float) -> Plan:
    raw = orjson.loads(text)
    claims = tuple(
        PlannedNodeClaim(
            node_pool=c["node_pool"],
            instance_type=c["instance_type"],
            zone=c["zone"],
            capacity_type=c["capacity_type"],
            price_per_hour=c["price_per_hour"],
            pods=tuple(c["pods"]),
            labels=dict(c["labels"]),
            alternatives=tuple(c["alternatives"]),
        )
        for c in raw["node_claims"]
    )
    existing = {name: tuple(pods) for name, pods in raw["existing_nodes"]}
    unschedulable = dict(raw["unschedulable"])
    return Plan(ENGINE, claims, existing, unschedulable, seconds)


def solve(snapshot: Snapshot) -> Plan:
    started = time.perf_counter()
    plan_json = _core.solve_json(encode(snapshot))
    return decode(plan_json, time.perf_counter() - started)
