"""The metrics kapstan exports: Karpenter's names and labels, kept apart from the default registry.

``REGISTRY`` is process-wide, so each test reads values before and after and asserts on the difference or
uses a NodePool name no other test touches.
"""

from __future__ import annotations

import prometheus_client
from prometheus_client.parser import text_string_to_metric_families

import kapstan
from kapstan.observability import metrics
from kapstan.observability.metrics import REGISTRY, value

# name -> (type, label names): what dashboards written for Karpenter query.
EXPECTED = {
    "karpenter_nodeclaims_created": ("counter", {"reason", "nodepool"}),
    "karpenter_nodeclaims_terminated": ("counter", {"nodepool"}),
    "karpenter_nodeclaims_disrupted": ("counter", {"reason", "nodepool"}),
    "karpenter_nodes_created": ("counter", {"nodepool"}),
    "karpenter_nodes_terminated": ("counter", {"nodepool"}),
    "karpenter_scheduler_scheduling_duration_seconds": ("histogram", {"controller"}),
    "karpenter_scheduler_queue_depth": ("gauge", {"controller"}),
    "karpenter_scheduler_unschedulable_pods_count": ("gauge", {"controller"}),
    "karpenter_cluster_state_node_count": ("gauge", set()),
    "karpenter_nodepools_usage": ("gauge", {"resource_type", "nodepool"}),
    "karpenter_nodepools_limit": ("gauge", {"resource_type", "nodepool"}),
    "karpenter_cloudprovider_instance_type_offering_available": (
        "gauge",
        {"instance_type", "capacity_type", "zone"},
    ),
    "kapstan_cluster_cost_per_hour": ("gauge", {"nodepool"}),
    "kapstan_nodeclaims": ("gauge", {"nodepool", "state"}),
    "kapstan_solver_pods": ("gauge", {"controller", "outcome"}),
    "kapstan_build_info": ("gauge", {"version"}),  # the text format has no info type
}


def _exposed() -> str:
    return prometheus_client.generate_latest(REGISTRY).decode()


def test_names_types_and_labels_match_karpenter() -> None:
    # Give every labelled metric a series so that its label names show in the exposition.
    metrics.NODECLAIMS_CREATED.labels("provisioned", "names").inc(0)
    metrics.NODECLAIMS_TERMINATED.labels("names").inc(0)
    metrics.NODECLAIMS_DISRUPTED.labels("empty", "names").inc(0)
    metrics.NODES_CREATED.labels("names").inc(0)
    metrics.NODES_TERMINATED.labels("names").inc(0)
    metrics.SCHEDULING_DURATION.labels(metrics.PROVISIONER).observe(0.0)
    metrics.PODS_PENDING.labels(metrics.PROVISIONER).set(0)
    metrics.record_plan(metrics.PROVISIONER, new_nodeclaim=0, existing_node=0, unschedulable=0)
    metrics.record_nodepool("names", usage={"cpu": 0}, limits={"cpu": 1}, cost_per_hour=0, nodeclaims={})
    metrics.OFFERING_AVAILABLE.labels("names", "on-demand", "names").set(1)

    exposed = {}
    for family in text_string_to_metric_families(_exposed()):
        labels = {name for sample in family.samples for name in sample.labels} - {"le"}
        exposed[family.name] = (family.type, labels)
    assert exposed == EXPECTED


def test_counters_export_the_total_name_only() -> None:
    """``<name>_created`` timestamps would read ``karpenter_nodeclaims_created_created``: not exported."""
    metrics.NODECLAIMS_CREATED.labels(metrics.REASON_PROVISIONED, "only-total").inc()
    text = _exposed()
    assert 'karpenter_nodeclaims_created_total{nodepool="only-total",reason="provisioned"} 1.0' in text
    assert "_created_created" not in text
    assert "karpenter_nodes_created_created" not in text


def test_counters_count_per_label() -> None:
    labels = {"reason": "provisioned", "nodepool": "count"}
    before = value("karpenter_nodeclaims_created_total", labels) or 0.0
    metrics.NODECLAIMS_CREATED.labels(**labels).inc()
    metrics.NODECLAIMS_CREATED.labels(**labels).inc()
    metrics.NODECLAIMS_CREATED.labels(reason="underutilized", nodepool="count").inc()
    assert value("karpenter_nodeclaims_created_total", labels) == before + 2


def test_scheduling_duration_uses_karpenter_buckets() -> None:
    labels = {"controller": metrics.DISRUPTION}
    count = value("karpenter_scheduler_scheduling_duration_seconds_count", labels) or 0.0
    metrics.SCHEDULING_DURATION.labels(metrics.DISRUPTION).observe(4.2)
    assert value("karpenter_scheduler_scheduling_duration_seconds_count", labels) == count + 1
    below = value("karpenter_scheduler_scheduling_duration_seconds_bucket", {**labels, "le": "4.0"})
    above = value("karpenter_scheduler_scheduling_duration_seconds_bucket", {**labels, "le": "4.5"})
    assert below is not None and above == below + 1
    assert (
        value("karpenter_scheduler_scheduling_duration_seconds_bucket", {**labels, "le": "600.0"}) is not None
    )


def test_record_nodepool_replaces_stale_resource_types_and_forget_removes_all() -> None:
    metrics.record_nodepool(
        "gpu-pool",
        usage={"cpu": 12, "memory": 48 * 2**30, "nvidia.com/gpu": 2, "nodes": 3},
        limits={"cpu": 100, "ephemeral-storage": 10**12},
        cost_per_hour=7.5,
        nodeclaims={metrics.NODECLAIM_INITIALIZED: 2, metrics.NODECLAIM_LAUNCHING: 1},
    )
    assert value("karpenter_nodepools_usage", {"resource_type": "nodes", "nodepool": "gpu-pool"}) == 3
    assert (
        value("karpenter_nodepools_usage", {"resource_type": "nvidia.com/gpu", "nodepool": "gpu-pool"}) == 2
    )
    limit = {"resource_type": "ephemeral_storage", "nodepool": "gpu-pool"}
    assert value("karpenter_nodepools_limit", limit) == 10**12, "Karpenter's label spells - as _"
    assert value("kapstan_cluster_cost_per_hour", {"nodepool": "gpu-pool"}) == 7.5
    claims = {
        state: value("kapstan_nodeclaims", {"nodepool": "gpu-pool", "state": state})
        for state in metrics.NODECLAIM_STATES
    }
    assert claims == {"launching": 1, "registering": 0, "initializing": 0, "initialized": 2, "deleting": 0}

    # The GPU nodes are gone and the limits were removed from the NodePool.
    metrics.record_nodepool(
        "gpu-pool",
        usage={"cpu": 4, "nodes": 1},
        limits={},
        cost_per_hour=1.25,
        nodeclaims={metrics.NODECLAIM_INITIALIZED: 1},
    )
    assert (
        value("karpenter_nodepools_usage", {"resource_type": "nvidia.com/gpu", "nodepool": "gpu-pool"})
        is None
    )
    assert value("karpenter_nodepools_limit", limit) is None
    assert value("karpenter_nodepools_usage", {"resource_type": "cpu", "nodepool": "gpu-pool"}) == 4
    assert value("kapstan_cluster_cost_per_hour", {"nodepool": "gpu-pool"}) == 1.25
    assert value("kapstan_nodeclaims", {"nodepool": "gpu-pool", "state": "launching"}) == 0
    assert value("kapstan_nodeclaims", {"nodepool": "gpu-pool", "state": "initialized"}) == 1

    metrics.forget_nodepool("gpu-pool")
    assert 'nodepool="gpu-pool"' not in _exposed()
    metrics.forget_nodepool("gpu-pool")  # deleting twice, or a NodePool never recorded, is harmless
    metrics.forget_nodepool("never-seen")


def test_record_plan_sets_outcomes_and_unschedulable() -> None:
    metrics.record_plan("plan-test", new_nodeclaim=7, existing_node=3, unschedulable=2)
    assert value("kapstan_solver_pods", {"controller": "plan-test", "outcome": "new_nodeclaim"}) == 7
    assert value("kapstan_solver_pods", {"controller": "plan-test", "outcome": "existing_node"}) == 3
    assert value("kapstan_solver_pods", {"controller": "plan-test", "outcome": "unschedulable"}) == 2
    assert value("karpenter_scheduler_unschedulable_pods_count", {"controller": "plan-test"}) == 2
    # The next solve overwrites, it does not add.
    metrics.record_plan("plan-test", new_nodeclaim=0, existing_node=12, unschedulable=0)
    assert value("kapstan_solver_pods", {"controller": "plan-test", "outcome": "new_nodeclaim"}) == 0
    assert value("karpenter_scheduler_unschedulable_pods_count", {"controller": "plan-test"}) == 0


def test_build_info_and_isolation_from_the_default_registry() -> None:
    assert value("kapstan_build_info", {"version": kapstan.__version__}) == 1
    default = prometheus_client.generate_latest(prometheus_client.REGISTRY).decode()
    assert "karpenter_" not in default
    assert "kapstan_" not in default
