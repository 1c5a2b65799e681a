"""Runs Karpenter's scheduler (the Go peer) on a snapshot and turns its answer into a kapstan `Plan`.

Two columns come from it:
- `karpenter`: every NodeClaim launched as its cheapest compatible offering, which is what Karpenter's
  reference providers (kwok, the fake provider) launch.
- `upstream-capi`: the upstream Karpenter CAPI provider. It reports every flavor at price 0, so the peer runs
  with `-zero-prices`; at launch it sorts the claim's compatible flavors by name and takes the first
  (docs/architecture.md#why-it-exists, and the motivating article: one 3-vCPU pod gets a c3-16, since
  "c3-16" < "c3-8"). The plan is then priced at the real prices.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.peers.export import Export, export
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    NODEPOOL,
    ZONE,
    Plan,
    PlannedNodeClaim,
    Snapshot,
)

KARPENTER = "karpenter"
UPSTREAM = "upstream-capi"

# Labels the peer's in-memory cluster state puts on its claims for its own bookkeeping (the claim's
# lifecycle and the NodeClass it was made from): no flavor, template or requirement gives them, so a plan
# carrying them is not one kube-scheduler would be asked about, and the validator rightly refuses them.
PEER_BOOKKEEPING_LABELS = frozenset(
    {"karpenter.sh/registered", "karpenter.sh/initialized", "karpenter.cluster.x-k8s.io/clusterapinodeclass"}
)


@dataclass(frozen=True)
class Option:
    name: str
    price: float
    zone: str
    capacity_type: str


@dataclass(frozen=True)
class Claim:
    node_pool: str
    pods: tuple[str, ...]
    options: tuple[Option, ...]
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PeerRun:
    """One invocation of the Go peer: its first run's claims and every run's times."""

    claims: tuple[Claim, ...]
    unschedulable: Mapping[str, str]
    solve_seconds: tuple[float, ...]
    setup_seconds: tuple[float, ...]
    version: str
    go_version: str


def parse(raw: Mapping[str, Any], pool_of: Mapping[str, str]) -> PeerRun:
    claims = tuple(
        Claim(
            pool_of.get(c["nodePool"], c["nodePool"]),
            tuple(c["pods"] or ()),
            tuple(Option(o["name"], o["price"], o["zone"], o["capacityType"]) for o in c["options"] or ()),
            dict(c.get("labels") or {}),
        )
        for c in raw["nodeClaims"] or ()
    )
    return PeerRun(
        claims,
        dict(raw.get("unschedulable") or {}),
        tuple(r["solveSeconds"] for r in raw["runs"]),
        tuple(r["setupSeconds"] for r in raw["runs"]),
        raw["karpenter"],
        raw["goVersion"],
    )


class PeerTimeout(Exception):
    """The peer's first solve did not finish within the cap."""


def run_peer(
    binary: Path,
    snapshot: Snapshot,
    name: str,
    repeat: int,
    zero_prices: bool,
    timeout: float | None = None,
    budget: float = 0.0,
) -> PeerRun:
    """Runs the Go peer; `timeout` bounds the whole process, `budget` its repetitions after the first."""
    exported: Export = export(snapshot, name)
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix=f"{name}-") as f:
        json.dump(exported.workload, f)
        f.flush()
        command = [str(binary), "-workload", f.name, "-repeat", str(repeat), "-budget", str(budget)]
        if zero_prices:
            command.append("-zero-prices")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise PeerTimeout(f"karpenter peer on {name} not done within {timeout:.0f} s") from e
    if done.returncode != 0:
        raise RuntimeError(f"karpenter peer on {name}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return parse(json.loads(done.stdout), exported.pool_of)


def cheapest(options: Sequence[Option]) -> Option:
    """Lowest price; ties keep Karpenter's order (it lists options cheapest first)."""
    return min(options, key=lambda o: o.price)


def name_first(options: Sequence[Option]) -> Option:
    """The upstream CAPI provider's rule: compatible flavors sorted by name, the first taken."""
    return min(options, key=lambda o: o.name)


def to_plan(
    run: PeerRun, snapshot: Snapshot, engine: str, pick: Callable[[Sequence[Option]], Option]
) -> Plan:
    flavors = {it.name: it for it in snapshot.instance_types}
    pools = {p.name: p for p in snapshot.node_pools}
    claims = []
    for c in run.claims:
        chosen = pick(c.options)
        labels = {
            **{k: v for k, v in c.labels.items() if k not in PEER_BOOKKEEPING_LABELS},
            **flavors[chosen.name].labels,
            **pools[c.node_pool].labels,
            NODEPOOL: c.node_pool,
            INSTANCE_TYPE: chosen.name,
            ZONE: chosen.zone,
            CAPACITY_TYPE: chosen.capacity_type,
        }
        claims.append(
            PlannedNodeClaim(
                c.node_pool, chosen.name, chosen.zone, chosen.capacity_type, chosen.price, c.pods, labels
            )
        )
    return Plan(engine, tuple(claims), {}, dict(run.unschedulable), run.solve_seconds[0])
