"""The measured phases: N pods from an empty pool, the Deployments scaled to a smaller count, then a
steady state in which nothing changes and kapstan should disrupt nothing.

Each phase looks at the fleet (every ``interval`` seconds, from the watches' stores: ``watch``) and
returns a plain dict of what it saw; the API request counts, the operator's costs and ``simulate`` are
added by the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bench.live import observe, scenario
from bench.live.watch import FleetWatch, sample
from kapstan.kube.client import Client
from kapstan.local.apply import apply

Say = Callable[[str], None]


STARVED_AFTER = 30.0
"""Seconds a node-agent pod must have been Pending to count as starved rather than arriving."""


async def scale_up(
    client: Client,
    watch: FleetWatch,
    namespace: str,
    run: str,
    pods: int,
    *,
    timeout: float,
    interval: float,
    say: Say,
) -> dict[str, Any]:
    """Apply the workloads for ``pods`` pods and wait until all are Running (or ``timeout``)."""
    start = time.time()
    await apply(client, scenario.workloads(namespace, run, pods))
    first_claim = half = everything = all_created = None
    agents_pending = agents_starved = 0
    agents_left: int | None = None
    pending_since: dict[str, float] = {}
    fleet = watch.fleet()
    while time.time() - start < timeout:
        fleet = watch.fleet()
        now = time.time() - start
        running = fleet.running()
        agents = [pod["metadata"]["name"] for pod in fleet.pending("node-agent")]
        agents_pending = max(agents_pending, len(agents))
        # An agent arriving on a new node is Pending for seconds; a starved one (its node full) stays so.
        pending_since = {name: pending_since.get(name, now) for name in agents}
        starved = sum(1 for since in pending_since.values() if now - since >= STARVED_AFTER)
        agents_starved = max(agents_starved, starved)
        if all_created is None and fleet.workload_pods() >= pods:
            all_created = now  # the controller-manager's pace: the ReplicaSets have made every pod
        if first_claim is None and fleet.claims:
            first_claim = now
        if half is None and running >= pods / 2:
            half = now
        if running >= pods:
            everything = now
            # Every workload pod runs: an agent still Pending now is starved (its node is full), not late.
            agents_left = len(agents)
            break
        say(f"T+{now:5.0f}s  claims {len(fleet.claims)}  running {running}/{pods}")
        await asyncio.sleep(interval)
    latencies, last_launched = observe.launch_latencies(fleet.claims)
    registrations = await sample(
        "the Nodes", lambda: observe.registration_latencies(client, fleet.claims, run)
    )
    registrations = registrations or []
    return {
        "start": start,
        "end": time.time(),
        "allCreatedSeconds": _round(all_created),
        "firstClaimSeconds": _round(first_claim),
        "allLaunchedSeconds": _round(last_launched - start) if last_launched else None,
        "launchP50Seconds": round(observe.percentile(latencies, 50), 1),
        "launchP90Seconds": round(observe.percentile(latencies, 90), 1),
        "registrationP50Seconds": round(observe.percentile(registrations, 50), 1),
        "registrationP90Seconds": round(observe.percentile(registrations, 90), 1),
        "halfRunningSeconds": _round(half),
        "allRunningSeconds": _round(everything),
        "timeline": observe.timeline(fleet, start),
        "running": fleet.running(),
        "nodes": len(fleet.claims),
        "price": fleet.price,
        "flavors": fleet.flavors(),
        "nodeAgentPendingPeak": agents_pending,
        "nodeAgentStarvedPeak": agents_starved,
        "nodeAgentPendingAtAllRunning": agents_left,
    }


async def scale_down(
    client: Client,
    watch: FleetWatch,
    namespace: str,
    pods: int,
    *,
    quiet: float,
    timeout: float,
    interval: float,
    say: Say,
) -> dict[str, Any]:
    """Scale the Deployments to ``pods`` in all; wait until the fleet has not changed for ``quiet``
    seconds with every pod Running (or ``timeout``). Settle time is the last change's."""
    start = time.time()
    for name, count in scenario.replicas(pods).items():
        await client.patch(observe.DEPLOYMENTS, name, {"spec": {"replicas": count}}, namespace=namespace)
    fleet = watch.fleet()
    seen, created, removed = fleet.names, set[str](), set[str]()
    last_change, longest_pending = start, 0.0
    lowest: dict[str, float] = {}
    while time.time() - start < timeout:
        await asyncio.sleep(interval)
        fleet = watch.fleet()
        now = time.time()
        if fleet.names != seen:
            created |= fleet.names - seen
            removed |= seen - fleet.names
            seen, last_change = fleet.names, now
        for pod in fleet.pending():
            longest_pending = max(longest_pending, now - observe.epoch(pod["metadata"]["creationTimestamp"]))
        shares = await sample("the Deployments", lambda: observe.availability(client, namespace))
        for name, share in (shares or {}).items():
            lowest[name] = min(lowest.get(name, 1.0), share)
        settled = now - last_change >= quiet and fleet.running() >= pods
        say(
            f"T+{now - start:5.0f}s  nodes {len(fleet.claims)}  running {fleet.running()}/{pods}  "
            f"created {len(created)} removed {len(removed)}"
        )
        if settled:
            break
    return {
        "start": start,
        "end": time.time(),
        "settled": time.time() - last_change >= quiet,
        "settleSeconds": round(last_change - start, 1),
        "claimsCreated": len(created),
        "claimsRemoved": len(removed),
        "longestPendingSeconds": round(longest_pending, 1),
        "lowestAvailability": {name: round(share, 3) for name, share in sorted(lowest.items())},
        "running": fleet.running(),
        "nodes": len(fleet.claims),
        "price": fleet.price,
        "flavors": fleet.flavors(),
    }


async def steady(
    watch: FleetWatch, pods: int, *, seconds: float, interval: float, say: Say
) -> dict[str, Any]:
    """Watch the fleet for ``seconds`` with the workloads left as they are: every NodeClaim created or
    removed in that time is churn (the caller adds the commands and evictions from the logs)."""
    start = time.time()
    fleet = watch.fleet()
    seen, created, removed = fleet.names, set[str](), set[str]()
    longest_pending, fewest_running = 0.0, fleet.running()
    while time.time() - start < seconds:
        await asyncio.sleep(interval)
        fleet = watch.fleet()
        now = time.time()
        created |= fleet.names - seen
        removed |= seen - fleet.names
        seen = fleet.names
        fewest_running = min(fewest_running, fleet.running())
        for pod in fleet.pending():
            longest_pending = max(longest_pending, now - observe.epoch(pod["metadata"]["creationTimestamp"]))
        if int(now - start) % 60 < interval:
            say(
                f"steady T+{now - start:5.0f}s  nodes {len(fleet.claims)}  running {fleet.running()}/{pods}  "
                f"created {len(created)} removed {len(removed)}"
            )
    return {
        "start": start,
        "end": time.time(),
        "seconds": round(time.time() - start, 1),
        "claimsCreated": len(created),
        "claimsRemoved": len(removed),
        "longestPendingSeconds": round(longest_pending, 1),
        "fewestRunning": fewest_running,
        "nodes": len(fleet.claims),
        "price": fleet.price,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
