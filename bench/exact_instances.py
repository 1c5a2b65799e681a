"""Small random priced instances with a MIP-proven optimum: what the exact pass is held to.

Each instance is what issue 17 describes as the batches people have: 3-6 flavors whose price per vCPU
and per GiB differ, 2-5 pod groups (a Deployment each) of 2-12 pods, some with hostname anti-affinity
against their own group, some with a DaemonSet overhead on every node; at most 60 pods.

The optimum comes from a MIP written independently of the engines' patterns: node slots (one per pod,
used in order), each bought as at most one flavor; per slot and group an integer count of pods (at most
one for an anti-affine group); every group's pods placed; per slot and resource the pods' requests
within the flavor's allocatable less the DaemonSets; minimise the price of the flavors bought. HiGHS
(scipy.optimize.milp) proves it, or says it did not.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

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


def optimum(snapshot: Snapshot, time_limit: float = 60.0) -> Optimum:
    groups = _groups(snapshot)
    ds = res.total(d.pod.requests for d in snapshot.daemonsets)
    options = [
        (_units(res.subtract(it.allocatable, ds), rounding=int), min(o.price for o in it.offerings))
        for it in snapshot.instance_types
    ]
    slots, n_groups, n_opts = len(snapshot.pods), len(groups), len(options)

    def x(g: int, n: int) -> int:  # column of "pods of group g on slot n"
        return g * slots + n

    def y(n: int, f: int) -> int:  # column of "slot n bought as flavor f"
        return n_groups * slots + n * n_opts + f

    size = n_groups * slots + slots * n_opts
    cost = np.zeros(size)
    upper_bounds = np.ones(size)
    for g, group in enumerate(groups):
        for n in range(slots):
            upper_bounds[x(g, n)] = 1 if group.anti else group.count
    for n in range(slots):
        for f, (_, price) in enumerate(options):
            cost[y(n, f)] = price
    rows = n_groups + slots + slots * 3 + slots - 1
    a = lil_matrix((rows, size))
    lower, upper = np.full(rows, -np.inf), np.zeros(rows)
    row = 0
    for g, group in enumerate(groups):
        for n in range(slots):
            a[row, x(g, n)] = 1
        lower[row] = upper[row] = group.count
        row += 1
    for n in range(slots):
        for f in range(n_opts):
            a[row, y(n, f)] = 1
        upper[row] = 1
        row += 1
    for n in range(slots):
        for k in range(3):
            for g, group in enumerate(groups):
                a[row, x(g, n)] = group.request[k]
            for f, (net, _) in enumerate(options):
                a[row, y(n, f)] = -net[k]
            row += 1
    for n in range(slots - 1):
        for f in range(n_opts):
            a[row, y(n + 1, f)] = 1
            a[row, y(n, f)] = -1
        row += 1
    result = milp(
        cost,
        constraints=LinearConstraint(a.tocsr(), lower, upper),
        integrality=np.ones(size),
        bounds=Bounds(0, upper_bounds),
        options={"time_limit": time_limit},
    )
    if result.x is None:
        return Optimum(None, False)
    return Optimum(round(float(result.fun), 6), result.status == 0)
