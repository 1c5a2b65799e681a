"""The greedy placement both engines start from (twin of `rust/src/solver/greedy/`).

Pods are placed, biggest first with CPU-heavy and memory-heavy ones interleaved (`order.py`), on existing
nodes, then on claims already opened, then on a new claim from the heaviest NodePool that can take them; a
pod that fits nowhere has its preferences relaxed one at a time (preferences.py). Pods that still fail
are retried while the previous round placed something (an affinity target may have arrived since). Then
improve.py re-packs claims for cost. Everything is deterministic: no clocks in decisions, no hash-order
iteration, ties broken by name.

The scheduler is built in layers, one a module, each adding steps to the one below: `checks.py` (its
state and what a pod's constraints allow where), `domains.py` (the domain a claim takes for each topology
key), `claims.py` (joining and opening claims, and through `refusals.py` why a pool cannot open one),
`placement.py` (the loop); `Scheduler` here sets the state up and writes the plan out.
"""

from __future__ import annotations

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling.counts import TopologyCounts
from kapstan.scheduling.greedy.checks import Checks
from kapstan.scheduling.greedy.order import biggest_first, placement_sequence
from kapstan.scheduling.greedy.placement import NO_MANAGED_FLAVOR, Placing
from kapstan.scheduling.model import PlannedNodeClaim, Snapshot
from kapstan.scheduling.targets import OFFERING_KEYS, Claim, ExistingTarget, PoolView

__all__ = ["NO_MANAGED_FLAVOR", "Checks", "Scheduler", "biggest_first", "placement_sequence"]


class Scheduler(Placing):
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        catalog = {it.name: it for it in snapshot.instance_types}
        ordered_pools = sorted(snapshot.node_pools, key=lambda p: (-p.weight, p.name))
        self.pools = [PoolView.build(p, catalog, snapshot.daemonsets) for p in ordered_pools]
        # Keys a flavor can give a node. Template labels and requirement-only keys are not among them:
        # they are in the requirements a pool's claims start from, and a pool that lacks them lacks them.
        self.flavor_keys = {key for it in snapshot.instance_types for key in it.labels}
        self.flavor_keys.update(OFFERING_KEYS)
        self.existing = [
            ExistingTarget.build(n, snapshot.daemonsets) for n in sorted(snapshot.nodes, key=lambda n: n.name)
        ]
        self.claims = []
        self.next_index = 0
        self.topology = TopologyCounts()
        self.topology.register(snapshot, (p for n in snapshot.nodes for p in n.pods), snapshot.pods)
        for target in self.existing:
            for pod in target.node.pods:
                self.topology.record(pod, target.domain, target.node.taints)
        self.placed_prefs = {}
        self._rules = {}
        self._starts = {}

    def planned(self, claim: Claim, alternatives: tuple[str, ...]) -> PlannedNodeClaim:
        flavor, pool = claim.chosen, claim.view.pool
        offering = flavor.cheapest_offering(claim.requirements)
        labels = pool.new_node_labels(flavor.it, offering.zone, offering.capacity_type)
        for key, req in claim.requirements.items():
            value = reqs.carried_value(req)
            if key not in labels and value is not None:
                labels[key] = value
        return PlannedNodeClaim(
            node_pool=pool.name,
            instance_type=flavor.name,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            price_per_hour=offering.price,
            pods=tuple(p.key for p in claim.pods),
            labels=dict(sorted(labels.items())),
            alternatives=alternatives,
        )
