"""The savings report: what the cluster's managed nodes cost now, beside what kapstan would run the same
pods on if it started from nothing, per NodePool and flavor.

"Managed" is what the catalog knows: a node whose Machine belongs to the Cluster and whose flavor
(``node.kubernetes.io/instance-type``) the catalog prices; its price is that flavor's offering in the
node's zone. The plan from scratch is the disruption core's ``without``: every managed node leaves the
snapshot and the pods a drain would move from them become pending (other nodes stay as they are,
pending pods are left out: the same pods, placed again), then the operator's solver plans them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from kapstan.api.wellknown import INSTANCE_TYPE, ZONE
from kapstan.controllers.disruption.consolidation import without
from kapstan.controllers.pods import pod_key, reschedulable
from kapstan.controllers.state import NODE_NAME
from kapstan.scheduling.model import InstanceType, Node, Plan
from kapstan.whatif.live import LiveView

NO_NODEPOOL = "-"
"""The NodePool column of a managed node no NodePool owns (a MachineDeployment scaled by hand or by
cluster-autoscaler)."""


@dataclass
class Row:
    node_pool: str
    flavor: str
    nodes_now: int = 0
    price_now: float = 0.0
    nodes_planned: int = 0
    price_planned: float = 0.0


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    unplaced: dict[str, str] = field(default_factory=dict)
    """Pods of managed nodes the plan from scratch places nowhere, with why."""
    unpriced: list[str] = field(default_factory=list)
    """Nodes of the Cluster whose flavor the catalog does not know: not counted."""

    @property
    def total_now(self) -> float:
        return round(sum(r.price_now for r in self.rows), 6)

    @property
    def total_planned(self) -> float:
        return round(sum(r.price_planned for r in self.rows), 6)

    @property
    def saving(self) -> float:
        return round(self.total_now - self.total_planned, 6)


def managed_nodes(view: LiveView) -> tuple[list[tuple[Node, float]], list[str]]:
    """The snapshot's nodes that are Machines of the Cluster with a flavor the catalog prices, each with
    its price per hour; and the names of the Cluster's nodes with no known flavor."""
    flavors = {it.name: it for it in view.snapshot.instance_types}
    priced: list[tuple[Node, float]] = []
    unpriced: list[str] = []
    for node in view.snapshot.nodes:
        raw = view.state.nodes.store.get(node.name)
        provider_id = (raw or {}).get("spec", {}).get("providerID")
        if raw is None or not provider_id or not view.state.provider.with_provider_id(provider_id):
            continue  # not a Machine of this Cluster (an in-flight claim has no Node yet: not counted)
        flavor = flavors.get(node.labels.get(INSTANCE_TYPE, ""))
        if flavor is None:
            unpriced.append(node.name)
            continue
        priced.append((node, _price(flavor, node.labels.get(ZONE, ""))))
    return priced, unpriced


def _price(flavor: InstanceType, zone: str) -> float:
    in_zone = [o.price for o in flavor.offerings if o.zone == zone]
    return min(in_zone or [o.price for o in flavor.offerings])


def build_report(view: LiveView) -> Report:
    nodes, unpriced = managed_nodes(view)
    moved = {
        node.name: [
            pod_key(p) for p in view.state.pods.store.by_index(NODE_NAME, node.name) if reschedulable(p)
        ]
        for node, _ in nodes
    }
    from_scratch = without(replace(view.snapshot, pods=()), moved)
    plan = view.solve(from_scratch)
    report = Report(unplaced=dict(plan.unschedulable), unpriced=unpriced)
    rows: dict[tuple[str, str], Row] = {}

    def row(pool: str, flavor: str) -> Row:
        return rows.setdefault((pool, flavor), Row(pool, flavor))

    for node, price in nodes:
        now = row(node.node_pool or NO_NODEPOOL, node.labels.get(INSTANCE_TYPE, ""))
        now.nodes_now += 1
        now.price_now = round(now.price_now + price, 6)
    for claim in _claims_of(plan):
        planned = row(claim[0], claim[1])
        planned.nodes_planned += 1
        planned.price_planned = round(planned.price_planned + claim[2], 6)
    report.rows = sorted(rows.values(), key=lambda r: (r.node_pool, r.flavor))
    return report


def _claims_of(plan: Plan) -> Iterable[tuple[str, str, float]]:
    return ((c.node_pool, c.instance_type, c.price_per_hour) for c in plan.node_claims)
