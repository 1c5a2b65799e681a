"""What the bench reads from the sandbox: the fleet at one instant (kept by ``watch``), launch and
registration times, Deployments, the accounting.

Everything is read with the admin client, which the audit policy leaves out, so the bench's polling does
not count as kapstan's requests.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kapstan.api.wellknown import INITIALIZED, INSTANCE_TYPE, LAUNCHED, NODEPOOL, PRICE_ANNOTATION, REGISTERED
from kapstan.capi import contract as c
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.kinds import NODECLAIMS, NODES
from kapstan.local.article import RUN_LABEL

log = logging.getLogger(__name__)

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass
class Fleet:
    """The run's NodeClaims and pods at one instant."""

    claims: list[Object]
    pods: list[Object]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(claim["metadata"]["name"] for claim in self.claims)

    @property
    def price(self) -> float:
        return round(sum(float(_annotations(cl).get(PRICE_ANNOTATION, 0)) for cl in self.claims), 4)

    def running(self, app: str | None = None) -> int:
        return sum(1 for pod in self._workload(app) if pod.get("status", {}).get("phase") == "Running")

    def workload_pods(self) -> int:
        """The Deployments' pods, whatever their phase."""
        return len(self._workload(None))

    def workload(self) -> list[Object]:
        """The Deployments' pods."""
        return self._workload(None)

    def pending(self, app: str | None = None) -> list[Object]:
        return [pod for pod in self._workload(app) if pod.get("status", {}).get("phase") == "Pending"]

    def flavors(self) -> dict[str, int]:
        counts = Counter(cl["metadata"].get("labels", {}).get(INSTANCE_TYPE, "?") for cl in self.claims)
        return dict(sorted(counts.items()))

    def _workload(self, app: str | None) -> list[Object]:
        def wanted(name: str) -> bool:
            return name != "node-agent" if app is None else name == app

        return [pod for pod in self.pods if wanted(pod["metadata"].get("labels", {}).get("app", ""))]


def launch_latencies(claims: list[Object]) -> tuple[list[float], float]:
    """Each claim's created -> Launched seconds, and the latest Launched instant (epoch; 0 if none)."""
    latencies, last = [], 0.0
    for claim in claims:
        for condition in claim.get("status", {}).get("conditions") or []:
            if condition["type"] == LAUNCHED and condition["status"] == "True":
                launched = epoch(condition["lastTransitionTime"])
                latencies.append(launched - epoch(claim["metadata"]["creationTimestamp"]))
                last = max(last, launched)
    return latencies, last


async def registration_latencies(client: Client, claims: list[Object], run: str) -> list[float]:
    """Each registered claim's Node joined -> Registered seconds: how long registration kept the Node
    tainted (for its DaemonSets' pods, docs/architecture.md#daemonsets-first)."""
    nodes = await client.request("GET", NODES, params={"labelSelector": f"{RUN_LABEL}={run}"})
    joined = {
        node["metadata"]["name"]: epoch(node["metadata"]["creationTimestamp"]) for node in nodes["items"]
    }
    latencies = []
    for claim in claims:
        node = claim.get("status", {}).get("nodeName")
        for condition in claim.get("status", {}).get("conditions") or []:
            if condition["type"] == REGISTERED and condition["status"] == "True" and node in joined:
                latencies.append(epoch(condition["lastTransitionTime"]) - joined[node])
    return latencies


TIMELINE = (
    ("claims created", "claim", "created"),
    ("Launched", "claim", LAUNCHED),
    ("Registered", "claim", REGISTERED),
    ("Initialized", "claim", INITIALIZED),
    ("pods bound", "pod", "PodScheduled"),
    ("pods Ready", "pod", "Ready"),
)
"""The scale-up's steps, each read from the objects' own times: a claim's creation and conditions, a
workload pod's PodScheduled (bound) and Ready (kwok made it Running) conditions."""


def timeline(fleet: Fleet, start: float) -> dict[str, list[float]]:
    """Each step's p50 and last instant, seconds after ``start`` (whole seconds: API timestamps are), for
    the time breakdown of the scale-up: where the seconds between the apply and all Running go."""
    workload = fleet.workload()
    steps = {}
    for name, kind, condition in TIMELINE:
        objects = fleet.claims if kind == "claim" else workload
        times = [t - start for t in (_stamp(obj, condition) for obj in objects) if t is not None]
        if times:
            steps[name] = [round(percentile(times, 50), 1), round(max(times), 1)]
    return steps


def _stamp(obj: Object, condition: str) -> float | None:
    if condition == "created":
        return epoch(obj["metadata"]["creationTimestamp"])
    return true_since(obj, condition)


def true_since(obj: Object, kind: str) -> float | None:
    """When condition ``kind`` of ``obj`` turned True (epoch seconds), or None if it is not True."""
    for found in obj.get("status", {}).get("conditions") or []:
        if found.get("type") == kind and found.get("status") == "True" and found.get("lastTransitionTime"):
            return epoch(found["lastTransitionTime"])
    return None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def availability(client: Client, namespace: str) -> dict[str, float]:
    """Each Deployment's available replicas over desired."""
    found = await client.request("GET", DEPLOYMENTS, namespace=namespace)
    shares = {}
    for deployment in found.get("items", []):
        desired = deployment["spec"].get("replicas", 0)
        available = deployment.get("status", {}).get("availableReplicas", 0)
        shares[deployment["metadata"]["name"]] = available / desired if desired else 1.0
    return shares


@dataclass
class Accounting:
    node_claims: int
    machines: int
    nodes: int
    replicas: int
    details: dict[str, int] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return self.node_claims == self.machines == self.nodes == self.replicas

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeClaims": self.node_claims,
            "machines": self.machines,
            "nodes": self.nodes,
            "replicas": self.replicas,
            "exact": self.exact,
        }


async def accounting(client: Client, namespace: str, pool: str, run: str) -> Accounting:
    claims = await client.request("GET", NODECLAIMS, params={"labelSelector": f"{NODEPOOL}={pool}"})
    machines = await client.request("GET", c.MACHINES, namespace=namespace)
    nodes = await client.request("GET", NODES, params={"labelSelector": f"{RUN_LABEL}={run}"})
    mds = await client.request("GET", c.MACHINEDEPLOYMENTS, namespace=namespace)
    return Accounting(
        node_claims=len(claims.get("items", [])),
        machines=len(machines.get("items", [])),
        nodes=len(nodes.get("items", [])),
        replicas=sum(c.replicas(md) for md in mds.get("items", [])),
    )


async def accounting_at_rest(
    client: Client, namespace: str, pool: str, run: str, *, timeout: float = 120.0
) -> tuple[Accounting, float]:
    """The accounting once it is exact, and how many seconds that took; the last one read if it is still
    not exact after ``timeout``. A NodeClaim the provisioner made a moment before has no Machine yet (the
    second-run row's 45 claims for 44 Machines: a claim created 2 s before its accounting was read), so
    one read at a fixed instant tells a leak from a claim in flight only by chance."""
    start = time.monotonic()
    last: Accounting | None = None
    while True:
        try:
            last = await accounting(client, namespace, pool, run)
        except ApiError as error:  # a slow API server: this read is missing, the next may do
            if last is None and time.monotonic() - start >= timeout:
                raise
            log.warning("reading the accounting failed: %s", error)
        waited = time.monotonic() - start
        if last is not None and (last.exact or waited >= timeout):
            return last, round(waited, 1)
        await asyncio.sleep(2.0)


def _annotations(obj: Object) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}
