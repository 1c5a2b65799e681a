"""Small random instances with a proven optimum: the `small` family.

The lower bound of kapstan/bench/bounds.py pools capacity across nodes, so on larger workloads a gap to it may be
no solver's fault. Here the instances are small enough (10-14 pods, 5 flavors) for an exact bin-packing
MIP, solved with scipy's HiGHS: every system's cost is then reported against the true optimum.

MIP: pod p on node slot n (x[p, n]), slot n bought as flavor f (y[n, f]); each pod on one slot, each slot
at most one flavor, per slot and resource the pods' requests within the flavor's allocatable (less the
DaemonSet overhead), slots used in order (symmetry); minimise the price of the flavors bought. Flavors
sell at one price in every zone and pods have no topology rules, so zones do not matter.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

from kapstan.bench.catalogs import GI, MI, flavor, karpenter_overhead, requests
from kapstan.bench.workloads import NAMESPACE, Workload
from kapstan.scheduling import resources as res
from kapstan.scheduling.model import NodePool, Pod, Snapshot
from kapstan.scheduling.topology import matches_node, untolerated

ZONES = ("small-a", "small-b")
SEEDS = tuple(range(1, 9))


def small_instance(seed: int) -> Snapshot:
    """10-14 pods of mixed shapes against 5 flavors whose price per vCPU and per GiB differ."""
    rng = random.Random(1000 + seed)
    flavors = []
    for i in range(5):
        cpus = rng.choice((2, 4, 8, 16))
        gib = cpus * rng.choice((1, 2, 4, 8))
        price = round(cpus * rng.uniform(0.02, 0.05) + gib * rng.uniform(0.003, 0.008), 4)
        flavors.append(flavor(f"f{i}-{cpus}c{gib}g", cpus, gib * GI, price, ZONES))
    # Every pod fits some flavor (after the 100m / 10Mi overhead), so the optimum places them all.
    room = [(f.allocatable["cpu"] - 100, f.allocatable["memory"] - 10 * MI * 1000) for f in flavors]
    pods = []
    for i in range(rng.randint(10, 14)):
        while True:
            size = requests(
                rng.choice((250, 500, 1000, 1500, 2000, 3000)), rng.choice((256, 1024, 2048, 4096, 8192)) * MI
            )
            if any(size["cpu"] <= c and size["memory"] <= m for c, m in room):
                break
        pods.append(Pod(NAMESPACE, f"p-{i}", size, labels={"app": f"a{i % 3}"}))
    return Snapshot(tuple(pods), tuple(flavors), (NodePool("default"),), daemonsets=karpenter_overhead())


@dataclass(frozen=True)
class Optimum:
    cost: float | None
    proven: bool


def optimum(snapshot: Snapshot, time_limit: float = 60.0) -> Optimum:
    pods = snapshot.pods
    options = []
    for it in snapshot.instance_types:
        labels = dict(it.labels)
        overhead = res.total(
            ds.pod.requests
            for ds in snapshot.daemonsets
            if matches_node(ds.pod, labels)
            and untolerated(ds.pod.tolerations, it.taints, prefer=False) is None
        )
        price = min(o.price for o in it.offerings if o.available)
        options.append((res.subtract(it.allocatable, overhead), price))
    names = sorted({r for p in pods for r in p.requests})
    n_pods, n_slots, n_opts = len(pods), len(pods), len(options)

    def x(p: int, n: int) -> int:  # column of "pod p on slot n"
        return p * n_slots + n

    def y(n: int, f: int) -> int:  # column of "slot n bought as flavor f"
        return n_pods * n_slots + n * n_opts + f

    size = n_pods * n_slots + n_slots * n_opts
    cost = np.zeros(size)
    for n in range(n_slots):
        for f, (_, price) in enumerate(options):
            cost[y(n, f)] = price
    rows = n_pods + n_slots + n_slots * len(names) + (n_slots - 1)
    a = lil_matrix((rows, size))
    lower, upper = np.full(rows, -np.inf), np.zeros(rows)
    row = 0
    for p in range(n_pods):  # each pod on exactly one slot
        for n in range(n_slots):
            a[row, x(p, n)] = 1
        lower[row] = upper[row] = 1
        row += 1
    for n in range(n_slots):  # at most one flavor per slot
        for f in range(n_opts):
            a[row, y(n, f)] = 1
        upper[row] = 1
        row += 1
    for n in range(n_slots):  # requests within the flavor bought
        for name in names:
            for p, pod in enumerate(pods):
                a[row, x(p, n)] = pod.requests.get(name, 0)
            for f, (allocatable, _) in enumerate(options):
                a[row, y(n, f)] = -allocatable.get(name, 0)
            row += 1
    for n in range(n_slots - 1):  # slot n+1 only after slot n (symmetry)
        for f in range(n_opts):
            a[row, y(n + 1, f)] = 1
            a[row, y(n, f)] = -1
        row += 1
    result = milp(
        cost,
        constraints=LinearConstraint(a.tocsr(), lower, upper),
        integrality=np.ones(size),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit},
    )
    if result.x is None:
        return Optimum(None, False)
    return Optimum(round(float(result.fun), 6), result.status == 0)


def small_workloads() -> list[Workload]:
    return [
        Workload(
            f"small-{s}",
            "small",
            len(small_instance(s).pods),
            partial(small_instance, s),
            "random, exact optimum",
        )
        for s in SEEDS
    ]
