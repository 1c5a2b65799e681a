"""Prometheus metrics, under Karpenter's names wherever they mean the same thing.

Users coming from Karpenter keep their dashboards and alerts (docs/architecture.md#stable-interfaces),
so a metric whose meaning matches one of Karpenter's takes its name, its type and its label names
(``nodepool``, ``reason``, ``controller``, ``resource_type``), checked against kubernetes-sigs/karpenter's
``pkg/metrics`` and scheduler metrics. Where Karpenter carries labels that mean nothing on Cluster API
(``capacity_type``, ``min_values_relaxed``) or that churn with every batch (``scheduling_id``), we leave them
out: queries that aggregate over them still work. What Karpenter has no word for is ``kapstan_*``.

Every metric lives in ``REGISTRY``, not in prometheus_client's global default registry, so that the
``/metrics`` endpoint shows exactly these and tests can read them without seeing other modules' state.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

import kapstan

# A counter's creation time is exported as a second series, ``<name>_created``; with Karpenter's
# ``karpenter_nodeclaims_created_total`` that reads as ``karpenter_nodeclaims_created_created``, and no
# Karpenter dashboard expects it.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = CollectorRegistry(auto_describe=True)
"""Everything ``/metrics`` serves."""

# Karpenter's DurationBuckets (controller-runtime's, stretched to 10 minutes for singleton controllers).
DURATION_BUCKETS: tuple[float, ...] = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
    *(120, 150, 300, 450, 600),
)

# Label values Karpenter uses for the same events.
PROVISIONER = "provisioner"
"""``controller`` label of the scheduling metrics when provisioning pending pods."""
DISRUPTION = "disruption"
"""``controller`` label of the scheduling metrics when simulating consolidation."""
REASON_PROVISIONED = "provisioned"
"""``reason`` of a NodeClaim created for pending pods (Karpenter's ``provisioned``)."""

BUILD_INFO = Info(
    "kapstan_build", "A constant 1 labelled by the version kapstan was built from.", registry=REGISTRY
)
"""``kapstan_build_info{version}``, Karpenter's ``karpenter_build_info`` for kapstan."""
BUILD_INFO.info({"version": kapstan.__version__})

NODECLAIMS_CREATED = Counter(
    "karpenter_nodeclaims_created_total",
    "Number of nodeclaims created in total by kapstan. Labeled by reason the nodeclaim was created and the owning nodepool.",
    ["reason", "nodepool"],
    registry=REGISTRY,
)
"""``karpenter_nodeclaims_created_total{reason, nodepool}``: ``reason`` is ``provisioned`` for pending pods,
or the disruption reason a replacement was created for."""

NODECLAIMS_TERMINATED = Counter(
    "karpenter_nodeclaims_terminated_total",
    "Number of nodeclaims terminated in total by kapstan. Labeled by the owning nodepool.",
    ["nodepool"],
    registry=REGISTRY,
)
"""``karpenter_nodeclaims_terminated_total{nodepool}``: a NodeClaim's finalizer completed (its Machine is
gone). Why it was terminated is counted in ``NODECLAIMS_DISRUPTED``, as in Karpenter."""

NODECLAIMS_DISRUPTED = Counter(
    "karpenter_nodeclaims_disrupted_total",
    "Number of nodeclaims disrupted in total by kapstan. Labeled by reason the nodeclaim was disrupted and the owning nodepool.",
    ["reason", "nodepool"],
    registry=REGISTRY,
)
"""``karpenter_nodeclaims_disrupted_total{reason, nodepool}``: kapstan decided to remove a NodeClaim;
``reason`` is ``empty``, ``drifted``, ``expired``, ``underutilized`` (consolidation) or ``liveness``
(launch or registration timed out)."""

NODES_CREATED = Counter(
    "karpenter_nodes_created_total",
    "Number of nodes created in total by kapstan. Labeled by owning nodepool.",
    ["nodepool"],
    registry=REGISTRY,
)
"""``karpenter_nodes_created_total{nodepool}``: a Node registered for one of our NodeClaims."""

NODES_TERMINATED = Counter(
    "karpenter_nodes_terminated_total",
    "Number of nodes terminated in total by kapstan. Labeled by owning nodepool.",
    ["nodepool"],
    registry=REGISTRY,
)
"""``karpenter_nodes_terminated_total{nodepool}``: a Node of ours drained and its Machine deleted."""

SCHEDULING_DURATION = Histogram(
    "karpenter_scheduler_scheduling_duration_seconds",
    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
    ["controller"],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
"""``karpenter_scheduler_scheduling_duration_seconds{controller}``: one solve, snapshot to plan;
``controller`` is ``PROVISIONER`` or ``DISRUPTION``."""

PODS_PENDING = Gauge(
    "karpenter_scheduler_queue_depth",
    "The number of pods currently waiting to be scheduled.",
    ["controller"],
    registry=REGISTRY,
)
"""``karpenter_scheduler_queue_depth{controller}``: pending pods in the batch being solved, Karpenter's
"pods pending" (without its per-batch ``scheduling_id`` label)."""

PODS_UNSCHEDULABLE = Gauge(
    "karpenter_scheduler_unschedulable_pods_count",
    "The number of unschedulable Pods.",
    ["controller"],
    registry=REGISTRY,
)
"""``karpenter_scheduler_unschedulable_pods_count{controller}``: pods the last solve could place nowhere."""

NODES = Gauge(
    "karpenter_cluster_state_node_count",
    "Current count of nodes in cluster state",
    registry=REGISTRY,
)
"""``karpenter_cluster_state_node_count``: every Node kapstan's cache holds, ours or not. Nodes per
NodePool are ``NODEPOOL_USAGE{resource_type="nodes"}``, as Karpenter reports them."""

NODEPOOL_USAGE = Gauge(
    "karpenter_nodepools_usage",
    "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.",
    ["resource_type", "nodepool"],
    registry=REGISTRY,
)
"""``karpenter_nodepools_usage{resource_type, nodepool}``: the NodePool's ``status.resources`` (``cpu`` in
cores, memory in bytes, ``nodes``); set through ``record_nodepool``."""

NODEPOOL_LIMIT = Gauge(
    "karpenter_nodepools_limit",
    "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
    ["resource_type", "nodepool"],
    registry=REGISTRY,
)
"""``karpenter_nodepools_limit{resource_type, nodepool}``: the NodePool's ``spec.limits``; set through
``record_nodepool``."""

CLUSTER_COST_PER_HOUR = Gauge(
    "kapstan_cluster_cost_per_hour",
    "Price per hour of the capacity kapstan has provisioned, by nodepool: the sum of the chosen flavors' prices.",
    ["nodepool"],
    registry=REGISTRY,
)
"""``kapstan_cluster_cost_per_hour{nodepool}``: sum of the price per hour of the NodePool's NodeClaims, in
the unit of ``kapstan.io/price-per-hour`` (relative cost when no price is known)."""

NODECLAIMS_BY_STATE = Gauge(
    "kapstan_nodeclaims",
    "NodeClaims by nodepool and lifecycle state: launching, registering, initializing, initialized, deleting.",
    ["nodepool", "state"],
    registry=REGISTRY,
)
"""``kapstan_nodeclaims{nodepool, state}``: the NodePool's NodeClaims now, each in one of
``NODECLAIM_STATES``; set through ``record_nodepool``. Karpenter has no such gauge (its
``operator_nodeclaim_status_condition_count`` is one series per NodeClaim and condition); the counters
cannot give it either, since they restart with the process."""

NODECLAIM_LAUNCHING = "launching"
"""Created, no Machine claimed yet (not Launched)."""
NODECLAIM_REGISTERING = "registering"
"""Launched, its Node not yet found and untainted (not Registered)."""
NODECLAIM_INITIALIZING = "initializing"
"""Registered, its Node not yet Ready or still carrying startup taints (not Initialized)."""
NODECLAIM_INITIALIZED = "initialized"
NODECLAIM_DELETING = "deleting"
"""Being terminated (drained, its Machine deleted), whatever state it had reached."""
NODECLAIM_STATES = (
    NODECLAIM_LAUNCHING,
    NODECLAIM_REGISTERING,
    NODECLAIM_INITIALIZING,
    NODECLAIM_INITIALIZED,
    NODECLAIM_DELETING,
)

SOLVER_PODS = Gauge(
    "kapstan_solver_pods",
    "Pods in the last solve by outcome: placed on a new nodeclaim, on an existing node, or unschedulable.",
    ["controller", "outcome"],
    registry=REGISTRY,
)
"""``kapstan_solver_pods{controller, outcome}``: the last plan's pods, ``outcome`` one of
``SOLVER_OUTCOMES``; a plan that places everything on existing nodes reads ``new_nodeclaim`` 0."""

SOLVER_OUTCOMES = ("new_nodeclaim", "existing_node", "unschedulable")

OFFERING_AVAILABLE = Gauge(
    "karpenter_cloudprovider_instance_type_offering_available",
    "Instance type offering availability, based on instance type, capacity type, and zone.",
    ["instance_type", "capacity_type", "zone"],
    registry=REGISTRY,
)
"""``karpenter_cloudprovider_instance_type_offering_available{instance_type, capacity_type, zone}``: 0 while
an offering is backed off after a failed launch, 1 once a launch of it registers again (only offerings that
have failed are reported)."""

_lock = threading.Lock()
# The resource-type series each NodePool was last given, so that stale ones can be removed.
_nodepool_series: dict[str, set[tuple[Gauge, str]]] = {}


def resource_type(name: str) -> str:
    """A Kubernetes resource name as Karpenter labels it: ``ephemeral-storage`` -> ``ephemeral_storage``."""
    return name.lower().replace("-", "_")


def record_nodepool(
    nodepool: str,
    *,
    usage: Mapping[str, float],
    limits: Mapping[str, float],
    cost_per_hour: float,
    nodeclaims: Mapping[str, int],
) -> None:
    """Set a NodePool's usage, limits, cost and NodeClaims by state; resource types it no longer reports
    disappear.

    ``usage`` and ``limits`` map resource names (``cpu`` in cores, ``memory`` in bytes, ``nodes``) to
    amounts, as the NodePool's ``status.resources`` and ``spec.limits`` hold them once parsed.
    ``nodeclaims`` counts its NodeClaims by ``NODECLAIM_STATES``; a state it leaves out reads 0, so that
    a stacked graph drops to 0 instead of holding the last value.
    """
    unknown = set(nodeclaims) - set(NODECLAIM_STATES)
    if unknown:
        raise ValueError(f"unknown NodeClaim states {sorted(unknown)}; known: {NODECLAIM_STATES}")
    wanted = {(NODEPOOL_USAGE, resource_type(k)): v for k, v in usage.items()}
    wanted |= {(NODEPOOL_LIMIT, resource_type(k)): v for k, v in limits.items()}
    with _lock:
        for gauge, kind in _nodepool_series.get(nodepool, set()) - wanted.keys():
            gauge.remove(kind, nodepool)
        for (gauge, kind), value in wanted.items():
            gauge.labels(kind, nodepool).set(value)
        _nodepool_series[nodepool] = set(wanted)
        CLUSTER_COST_PER_HOUR.labels(nodepool).set(cost_per_hour)
        for state in NODECLAIM_STATES:
            NODECLAIMS_BY_STATE.labels(nodepool, state).set(nodeclaims.get(state, 0))


def forget_nodepool(nodepool: str) -> None:
    """Drop a deleted NodePool's gauges, so that dashboards stop showing its last values."""
    with _lock:
        series = _nodepool_series.pop(nodepool, None)
        if series is None:
            return  # never recorded; prometheus_client's remove() would raise for an unknown series
        for gauge, kind in series:
            gauge.remove(kind, nodepool)
        CLUSTER_COST_PER_HOUR.remove(nodepool)
        for state in NODECLAIM_STATES:
            NODECLAIMS_BY_STATE.remove(nodepool, state)


def record_plan(controller: str, *, new_nodeclaim: int, existing_node: int, unschedulable: int) -> None:
    """Publish one solve's outcome: its pods by where they went (``SOLVER_PODS``, ``PODS_UNSCHEDULABLE``)."""
    counts = {"new_nodeclaim": new_nodeclaim, "existing_node": existing_node, "unschedulable": unschedulable}
    for outcome, count in counts.items():
        SOLVER_PODS.labels(controller, outcome).set(count)
    PODS_UNSCHEDULABLE.labels(controller).set(unschedulable)


def value(name: str, labels: Mapping[str, str] | None = None) -> float | None:
    """A sample's current value in ``REGISTRY`` (``None`` when absent): for tests and the demo's timeline."""
    return REGISTRY.get_sample_value(name, dict(labels or {}))
