"""Small random priced instances with a MIP-proven optimum: what the exact pass is held to.

Each instance is what issue 17 describes as the batches people have: 3-6 flavors whose price per vCPU
and per GiB differ, 2-5 pod groups (a Deployment each) of 2-12 pods, some with hostname anti-affinity
against their own group, some with a DaemonSet overhead on every node; at most 60 pods.

The optimum comes from a MIP written independently of the engines: every maximal packing of one node of
each flavor (pods per group, at most one of an anti-affine group, requests within the allocatable less
the DaemonSets) is enumerated by brute force here, and an integer count of nodes per packing must cover
every group's pods at the least price. Any plan's nodes are subsets of such packings, so that optimum is
the instance's; HiGHS (scipy.optimize.milp) proves it, or says it did not. (A slot formulation, pod on
node slot and slot bought as a flavor, found the same optima on these seeds but took up to a minute
each to prove.)
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from kapstan.bench.catalogs import GI, MI, flavor, overhead, requests
from kapstan.scheduling import resources as res
from kapstan.scheduling.model import (
    CPU,
    HOSTNAME,
    MEMORY,
    PODS,
    DaemonSet,
    LabelSelector,
    NodePool,
    Pod,
    PodAffinityTerm,
    Snapshot,
    Toleration,
)

NAMESPACE = "small"
SEEDS = tuple(range(1, 61))
MAX_PODS = 60
CPU_SIZES = (250, 500, 1000, 1500, 2000, 3000)
MEMORY_MIB = (256, 512, 1024, 2048, 4096, 6144)


def instance(seed: int) -> Snapshot:
    """One seeded instance; the same seed gives the same snapshot."""
    rng = random.Random(17_000 + seed)
    flavors = []
    for i in range(rng.randint(3, 6)):
        cpus = rng.choice((2, 4, 8, 16))
        gib = cpus * rng.choice((1, 2, 4, 8))
        price = round(cpus * rng.uniform(0.02, 0.05) + gib * rng.uniform(0.003, 0.008), 4)
        flavors.append(flavor(f"f{i}-{cpus}c{gib}g", cpus, gib * GI, price, ("zone-a",)))
    daemonsets: tuple[DaemonSet, ...] = ()
    if rng.random() < 0.5:
        ds_cpu, ds_mib = rng.choice((100, 200)), rng.choice((128, 256))
        daemonsets = (overhead("agent", ds_cpu, ds_mib * MI, tolerations=(Toleration(operator="Exists"),)),)
    room = [res.subtract(f.allocatable, res.total(d.pod.requests for d in daemonsets)) for f in flavors]
    pods: list[Pod] = []
    for g in range(rng.randint(2, 5)):
        while True:
            size = requests(rng.choice(CPU_SIZES), rng.choice(MEMORY_MIB) * MI)
            if any(res.fits({}, size, r) for r in room):
                break
        count = min(rng.randint(2, 12), MAX_PODS - len(pods))
        labels = {"app": f"g{g}"}
        anti: tuple[PodAffinityTerm, ...] = ()
        if rng.random() < 0.3:
            anti = (PodAffinityTerm(LabelSelector(match_labels=(("app", f"g{g}"),)), HOSTNAME, (NAMESPACE,)),)
        pods += [Pod(NAMESPACE, f"g{g}-{i}", size, labels=labels, anti_affinity=anti) for i in range(count)]
    return Snapshot(tuple(pods), tuple(flavors), (NodePool("default"),), daemonsets=daemonsets)


@dataclass(frozen=True)
class Group:
    request: tuple[int, ...]
    count: int
    anti: bool


@dataclass(frozen=True)
class Optimum:
    cost: float | None
    proven: bool


def _units(vector: dict[str, int], rounding: type[int] | None = None) -> tuple[int, ...]:
    """cpu in millicores, memory in MiB, pods as a count: small integers HiGHS handles exactly."""
    memory = vector.get(MEMORY, 0) / (1000 * MI)
    return (
        vector.get(CPU, 0),
        math.floor(memory) if rounding else round(memory),
        vector.get(PODS, 0) // 1000,
    )


def _groups(snapshot: Snapshot) -> list[Group]:
    groups: dict[str, Group] = {}
    for pod in snapshot.pods:
        name = pod.labels["app"]
        known = groups.get(name)
        count = known.count + 1 if known else 1
        groups[name] = Group(_units(dict(pod.requests)), count, bool(pod.anti_affinity))
    return list(groups.values())


def _packings(net: tuple[int, ...], groups: list[Group]) -> list[tuple[int, ...]]:
    """Every maximal count vector of pods per group that one node with `net` holds."""
    out: list[tuple[int, ...]] = []

    def fits(counts: list[int]) -> bool:
        return all(
            sum(n * g.request[k] for n, g in zip(counts, groups, strict=True)) <= net[k]
            for k in range(len(net))
        )

    def grow(counts: list[int], g: int) -> None:
        if g == len(groups):
            room = [i for i, group in enumerate(groups) if counts[i] < (1 if group.anti else group.count)]
            if any(counts) and not any(fits([n + (i == j) for j, n in enumerate(counts)]) for i in room):
                out.append(tuple(counts))
            return
        most = 1 if groups[g].anti else groups[g].count
        for n in range(most + 1):
            counts.append(n)
            if fits(counts + [0] * (len(groups) - g - 1)):
                grow(counts, g + 1)
            counts.pop()
            if not fits([*counts, n + 1] + [0] * (len(groups) - g - 1)):
                break

    grow([], 0)
    return out


def optimum(snapshot: Snapshot, time_limit: float = 60.0) -> Optimum:
    """The cheapest cover of every group's pods by nodes, each node one maximal packing of a flavor."""
    groups = _groups(snapshot)
    ds = res.total(d.pod.requests for d in snapshot.daemonsets)
    columns: list[tuple[tuple[int, ...], float]] = []
    for it in snapshot.instance_types:
        net = _units(res.subtract(it.allocatable, ds), rounding=int)
        price = min(o.price for o in it.offerings)
        columns += [(packing, price) for packing in _packings(net, groups)]
    if not columns:
        return Optimum(None, False)
    a = np.array([[packing[g] for packing, _ in columns] for g in range(len(groups))], dtype=float)
    need = np.array([g.count for g in groups], dtype=float)
    result = milp(
        np.array([price for _, price in columns]),
        constraints=LinearConstraint(a, need, np.full(len(groups), np.inf)),
        integrality=np.ones(len(columns)),
        bounds=Bounds(0, np.inf),
        options={"time_limit": time_limit},
    )
    if result.x is None:
        return Optimum(None, False)
    return Optimum(round(float(result.fun), 6), result.status == 0)
