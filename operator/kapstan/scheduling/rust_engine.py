"""The Rust engine: the snapshot goes to `kapstan._core` as JSON once, the plan comes back as JSON.

Maps whose order matters (a pod's requests, labels) keep their order in the JSON objects, so the Rust
side sees them in the same order the Python engine does and words its reasons identically.
"""

from __future__ import annotations

import time

import orjson

from kapstan import _core
from kapstan.scheduling.model import Plan, PlannedNodeClaim, Snapshot

ENGINE = "rust"


def encode(snapshot: Snapshot) -> bytes:
    """The snapshot as JSON, straight from the dataclasses (orjson keeps mapping order, which the Rust
    side reads back in order)."""
    return orjson.dumps(snapshot)


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
