"""The cluster-autoscaler peer's binpacking estimator (`estimator/binpacking_estimator.go`) with the
decreasing pod orderer (`estimator/decreasing_pod_orderer.go`), and least-waste's score of an estimate
(`expander/waste/waste.go`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.peers.ca.cluster import Node, Profile
from bench.peers.ca.groups import NodeGroup
from bench.peers.ca.predicates import Cluster
from kapstan.scheduling.model import CPU, MEMORY, Pod

MAX_NODES_PER_SCALEUP = 1000


@dataclass
class Estimate:
    group: NodeGroup
    nodes: list[Node]
    cpu: int
    """CPU requested by the pods it places."""
    memory: int


Step = tuple[Profile, list[Pod]]
"""A pod, or a run of alike plain pods, and the profile they share."""


def _objects(items: Sequence[object]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class Orders:
    """The estimator's pod order per template: decreasing cpu / node cpu + memory / node memory, ties in
    pending order. It depends on the template's cpu and memory only, so the groups of a flavor in several
    zones, next to each other by name, share one sort (only the last is kept: one holds 20,000 pods)."""

    def __init__(self, pending: list[Profile], cluster: Cluster) -> None:
        self.pending = pending
        self.cpu = np.array([p.pod.requests.get(CPU, 0) for p in pending], dtype=np.float64)
        self.memory = np.array([p.pod.requests.get(MEMORY, 0) for p in pending], dtype=np.float64)
        # Plain pods of one shape share an id, any other pod has its own: runs are where ids repeat.
        shapes: dict[object, int] = {}
        self.shapes = np.array(
            [
                shapes.setdefault((p.needs, p.static), len(shapes)) if p.plain else -1 - i
                for i, p in enumerate(pending)
            ]
        )
        # Object arrays: reordering 20,000 pods per template is then one indexing, not a Python loop.
        self.profiles, self.pods = _objects(pending), _objects([p.pod for p in pending])
        self.cluster = cluster
        self.allocatable: dict[str, np.ndarray] = {}
        self.last: tuple[tuple[int, int], list[Step]] | None = None

    def of(self, group: NodeGroup) -> list[Step]:
        """The pods in order, consecutive plain pods of one shape as one run, any other pod alone."""
        size = (group.allocatable.get(CPU, 0), group.allocatable.get(MEMORY, 0))
        if self.last is None or self.last[0] != size:
            self.last = (size, self._steps(*size))
        return self.last[1]

    def _steps(self, cpu: int, memory: int) -> list[Step]:
        # Float division of exact integers, as `pod cpu / node cpu` in Python: the same scores.
        score = (self.cpu / cpu if cpu else 0.0) + (self.memory / memory if memory else 0.0)
        order = np.argsort(-score, kind="stable")
        shapes = self.shapes[order]
        starts = np.concatenate([[0], np.flatnonzero(shapes[1:] != shapes[:-1]) + 1])
        ends = [*starts[1:].tolist(), len(order)]
        pods = self.pods[order].tolist()
        firsts = self.profiles[order[starts]].tolist()
        return list(zip(firsts, [pods[a:b] for a, b in zip(starts.tolist(), ends, strict=True)], strict=True))

    def allocatable_of(self, group: NodeGroup) -> np.ndarray:
        found = self.allocatable.get(group.name)
        if found is None:
            found = self.allocatable[group.name] = self.cluster.vector(group.allocatable)
        return found


class Estimator:
    """The binpacking estimator for one node group; the nodes it adds stay in the cluster until revert."""

    def __init__(self, cluster: Cluster, group: NodeGroup, allocatable: np.ndarray) -> None:
        self.cluster, self.group, self.allocatable = cluster, group, allocatable
        self.start = len(cluster.nodes)
        self.added: list[Node] = []
        self.cpu = self.memory = 0
        self.pointers: dict[object, int] = {}

    def place(self, profile: Profile) -> None:
        cluster = self.cluster
        conditions = cluster.conditions(profile)
        target = None
        if conditions is not None:
            target = cluster.first_fit_new(profile, conditions, self.start, self.pointers)
        if target is None:
            target = self._new_node_for(profile)
        if target is not None:
            cluster.add_pod(target, profile)
            self._count(profile, 1)

    def _new_node_for(self, profile: Profile) -> Node | None:
        if self.added and not self.added[-1].pods:
            return None  # an empty new node did not take it; another one would not either
        if len(self.added) >= MAX_NODES_PER_SCALEUP:
            return None
        node = self.cluster.add_node(self.group, self.allocatable)
        self.added.append(node)
        conditions = self.cluster.conditions(profile)  # the new node may add a domain
        if conditions is None or not self.cluster.fits(profile, node, conditions):
            return None
        return node

    def _count(self, profile: Profile, pods: int) -> None:
        self.cpu += pods * profile.pod.requests.get(CPU, 0)
        self.memory += pods * profile.pod.requests.get(MEMORY, 0)

    def place_run(self, first: Profile, run: list[Pod]) -> None:
        """Plain pods of one shape, as `place` would put them one by one: each goes to the first row with
        room, so the run fills the rows in order, each with as many as it has room for, then new nodes."""
        cluster = self.cluster
        shape = (first.needs, ())  # the pointer `first_fit_new` keeps for this shape
        start, end = self.pointers.get(shape, self.start), len(cluster.nodes)
        placed, row = 0, end
        room = cluster.room_for(first, start, end)
        for offset in np.flatnonzero(room).tolist():
            if placed == len(run):
                break
            row = start + offset
            placed = self._fill(first, cluster.nodes[row], run, placed, int(room[offset]))
        while placed < len(run):
            node = self._new_node_for(first)
            if node is None:
                break
            row = node.row
            placed = self._fill(first, node, run, placed, int(cluster.room_for(first, row, row + 1)[0]))
        self.pointers[shape] = row  # the rows before the last one filled have no room left for this shape

    def _fill(self, first: Profile, node: Node, run: list[Pod], placed: int, room: int) -> int:
        take = run[placed : placed + room]
        self.cluster.add_alike(node, first, take)
        self._count(first, len(take))
        return placed + len(take)

    def result(self) -> Estimate:
        return Estimate(self.group, [n for n in self.added if n.pods], self.cpu, self.memory)


def estimate(cluster: Cluster, orders: Orders, group: NodeGroup) -> Estimate:
    """The binpacking estimator for one node group; the nodes it adds stay in the cluster until revert."""
    allocatable = orders.allocatable_of(group)
    estimator = Estimator(cluster, group, allocatable)
    for profile, pods in orders.of(group):
        if not cluster.admits(profile, group, allocatable):
            continue
        if profile.plain:
            estimator.place_run(profile, pods)
        else:
            estimator.place(profile)
    return estimator.result()


def waste(option: Estimate) -> float:
    """least-waste: unused share of the new nodes' CPU plus the same for memory."""
    count = len(option.nodes)
    cpu = option.group.capacity.get(CPU, 0) * count
    memory = option.group.capacity.get(MEMORY, 0) * count
    return (cpu - option.cpu) / cpu + (memory - option.memory) / memory
