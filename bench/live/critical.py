"""Each NodeClaim's critical path through the scale-up: where the seconds between a claim and its pods
Running go, step by step, so the slowest step is the one worked on.

For every claim the instants are read from the objects' own times: the claim's creation, its Machine's
creation (the Machine annotated as the claim's), the claim's ``Launched`` (kapstan claimed that Machine),
the Machine's ``BootstrapConfigReady`` (its bootstrap data exists), the Node's creation (the
infrastructure booted it and it joined), the Node's ``Ready``, the claim's ``Registered`` and the last
of the workload pods bound to that Node turning ``Ready``. Some run side by side (a Machine may have
its bootstrap data before kapstan claims it), so a step can be negative: it then cost the path nothing.
A step is counted only for a claim that reached both ends. The API server's timestamps are whole
seconds, so each step is too, give or take one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from bench.live.observe import epoch, percentile, true_since
from kapstan.api.wellknown import LAUNCHED, NODECLAIM_ANNOTATION, REGISTERED
from kapstan.capi import contract as c
from kapstan.kube.client import Object

POINTS = (
    "claim created",
    "Machine created",
    "Launched",
    "bootstrap ready",
    "Node created",
    "Node Ready",
    "Registered",
    "pods Running",
)
"""The instants of one claim's path, in the order they happen."""

BOOTSTRAP_READY = "BootstrapConfigReady"
"""The v1beta2 Machine condition saying its bootstrap data secret exists."""

STEPS = tuple(f"{a} -> {b}" for a, b in pairwise(POINTS))


@dataclass(frozen=True)
class Path:
    claim: str
    instants: dict[str, float]
    """Epoch seconds of each point the claim reached."""

    def steps(self) -> dict[str, float]:
        """Seconds of each step whose both ends were reached."""
        return {
            f"{a} -> {b}": self.instants[b] - self.instants[a]
            for a, b in pairwise(POINTS)
            if a in self.instants and b in self.instants
        }


def paths(
    claims: Iterable[Object], machines: Iterable[Object], nodes: Iterable[Object], pods: Iterable[Object]
) -> list[Path]:
    """Every claim's path, from the claims, the Machines, the Nodes and the workload pods (the run's)."""
    machine_of = {owner: m for m in machines if (owner := c.annotations_of(m).get(NODECLAIM_ANNOTATION))}
    node_by_name = {node["metadata"]["name"]: node for node in nodes}
    node_by_provider = {
        pid: node for node in node_by_name.values() if (pid := node.get("spec", {}).get("providerID"))
    }
    ready_by_node: dict[str, float] = {}
    for pod in pods:
        node_name = pod.get("spec", {}).get("nodeName")
        ready = true_since(pod, "Ready")
        if node_name and ready is not None:
            ready_by_node[node_name] = max(ready, ready_by_node.get(node_name, ready))
    found = []
    for claim in claims:
        name = claim["metadata"]["name"]
        status = claim.get("status", {})
        instants = {"claim created": epoch(claim["metadata"]["creationTimestamp"])}
        machine = machine_of.get(name)
        if machine is not None:
            instants["Machine created"] = epoch(machine["metadata"]["creationTimestamp"])
            _put(instants, "bootstrap ready", true_since(machine, BOOTSTRAP_READY))
        node = node_by_name.get(status.get("nodeName", "")) or node_by_provider.get(
            status.get("providerID", "")
        )
        if node is not None:
            instants["Node created"] = epoch(node["metadata"]["creationTimestamp"])
            _put(instants, "Node Ready", true_since(node, "Ready"))
            _put(instants, "pods Running", ready_by_node.get(node["metadata"]["name"]))
        _put(instants, "Launched", true_since(claim, LAUNCHED))
        _put(instants, "Registered", true_since(claim, REGISTERED))
        found.append(Path(name, instants))
    return found


def summary(found: list[Path]) -> dict[str, dict[str, Any]]:
    """Each step's p50 and max seconds and how many claims it counts, in path order."""
    by_step: dict[str, list[float]] = {step: [] for step in STEPS}
    for path in found:
        for step, seconds in path.steps().items():
            by_step[step].append(seconds)
    return {
        step: {"p50": round(percentile(values, 50), 1), "max": round(max(values), 1), "claims": len(values)}
        for step, values in by_step.items()
        if values
    }


def trimmed(obj: Object) -> Object:
    """What ``paths`` reads of an object, for a recording of a run (tests replay one)."""
    meta = obj["metadata"]
    annotations = c.annotations_of(obj)
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "metadata": {
            "name": meta["name"],
            "creationTimestamp": meta["creationTimestamp"],
            **(
                {"annotations": {NODECLAIM_ANNOTATION: annotations[NODECLAIM_ANNOTATION]}}
                if NODECLAIM_ANNOTATION in annotations
                else {}
            ),
        },
        "spec": {key: spec[key] for key in ("nodeName", "providerID") if key in spec},
        "status": {
            **{key: status[key] for key in ("nodeName", "providerID") if key in status},
            "conditions": [
                {key: cond.get(key) for key in ("type", "status", "lastTransitionTime")}
                for cond in status.get("conditions") or []
            ],
        },
    }


def _put(instants: dict[str, float], point: str, at: float | None) -> None:
    if at is not None:
        instants[point] = at
