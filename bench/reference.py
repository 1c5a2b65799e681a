"""A deliberately naive packer, as evidence of what is achievable on workloads without topology rules.

Pods in a seeded random order, first fit into open nodes; a pod that fits none opens the largest option
(by CPU, then memory) it fits on; at the end every node is shrunk to the cheapest option that holds its
pods. Shuffling mixes CPU-heavy and memory-heavy pods on each node, which a biggest-first order does not.
It ignores affinity, anti-affinity, spread and preferences, so it only runs on snapshots without hard
topology rules; its plan goes through the same validator as the engines' plans.
"""

from __future__ import annotations

import random
import time

from kapstan.bench.measure import Result, assess
from kapstan.bench.options import Option, build_options, build_shapes
from kapstan.bench.workloads import Workload
from kapstan.scheduling import resources as res
from kapstan.scheduling.model import CPU, MEMORY, Plan, PlannedNodeClaim, Snapshot

ENGINE = "reference"


def applies(snapshot: Snapshot) -> bool:
    return not snapshot.nodes and not any(
        p.affinity or p.anti_affinity or p.spread or p.host_ports for p in snapshot.pods
    )


class _Node:
    def __init__(self, option: int, compatible: frozenset[int]) -> None:
        self.option = option
        self.compatible = compatible
        """Options every pod on the node fits on alone."""
        self.pods: list[str] = []
        self.used: dict[str, int] = {}


def pack(snapshot: Snapshot, seed: int = 0) -> Plan | None:
    """The naive packing as a plan, or None if it does not apply or a pod fits nowhere."""
    if not applies(snapshot):
        return None
    started = time.perf_counter()
    options = build_options(snapshot)
    shapes, shape_of = build_shapes(snapshot.pods, options)
    pods = list(snapshot.pods)
    random.Random(seed).shuffle(pods)
    nodes: list[_Node] = []
    for pod in pods:
        compatible = shapes[shape_of[pod.key]].options
        node = next(
            (
                n
                for n in nodes
                if n.option in compatible and res.fits(n.used, pod.requests, options[n.option].capacity)
            ),
            None,
        )
        if node is None:
            if not compatible:
                return None
            biggest = max(compatible, key=lambda i: _size(options[i]))
            node = _Node(biggest, compatible)
            nodes.append(node)
        node.pods.append(pod.key)
        node.compatible &= compatible
        node.used = res.add(node.used, pod.requests)
    claims = tuple(_claim(_cheapest(options, n), n) for n in nodes)
    return Plan(ENGINE, claims, {}, {}, time.perf_counter() - started)


def _size(option: Option) -> tuple[int, int, float]:
    return option.capacity.get(CPU, 0), option.capacity.get(MEMORY, 0), -option.price


def _cheapest(options: list[Option], node: _Node) -> Option:
    holding = [options[i] for i in node.compatible if res.fits({}, node.used, options[i].capacity)]
    return min(holding, key=lambda o: (o.price, o.name))


def _claim(option: Option, node: _Node) -> PlannedNodeClaim:
    assert option.pool is not None
    return PlannedNodeClaim(
        option.pool,
        option.flavor,
        option.zone,
        option.capacity_type,
        option.price,
        tuple(node.pods),
        option.labels,
    )


def reference_result(workload: Workload, snapshot: Snapshot, bound: float | None) -> Result | None:
    plan = pack(snapshot)
    if plan is None:
        return None
    result = Result(workload.name, workload.family, ENGINE, len(snapshot.pods), seconds=[plan.solve_seconds])
    if any(p.preferred_terms or p.preferred_affinity or p.preferred_anti_affinity for p in snapshot.pods):
        result.note = "the reference ignores preferences, which the engines honour where they can"
    return assess(result, snapshot, plan, bound)
