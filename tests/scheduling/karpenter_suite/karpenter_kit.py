"""Shared vocabulary of the Karpenter-derived suite (issue 12): an independent oracle for both engines.

Each case in this folder restates one upstream test (Karpenter core's provisioning and scheduling suites,
kube-scheduler's filter plugins) in our own words and names it in its docstring. The catalog below is
shaped like Karpenter's fake cloud provider: three zones, spot and on-demand offerings, a few sizes, an
arm64 and a windows flavor, a GPU flavor. Every plan goes through the validator before a case looks at
it, so a case fails both when the plan breaks a hard rule and when it differs from what upstream does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from builders import GI, MI, cpu, make_pod, mem
from kapstan.api.manifests import add_documents, load_manifests, load_text
from kapstan.scheduling import solve
from kapstan.scheduling.model import (
    ARCH,
    CAPACITY_TYPE,
    CPU,
    HOSTNAME,
    INSTANCE_TYPE,
    MEMORY,
    OS,
    PODS,
    ZONE,
    InstanceType,
    LabelSelector,
    Node,
    NodePool,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Offering,
    Plan,
    PlannedNodeClaim,
    Pod,
    Snapshot,
    Taint,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate
from kapstan.snapshot import build_snapshot, convert_pod

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
GPU = "nvidia.com/gpu"
INTEGER = "example.com/integer"
"""An integer label on every flavor (its vCPU count in Karpenter's fake provider), for Gt/Lt/Gte/Lte."""
SPOT, ON_DEMAND = "spot", "on-demand"
APP = LabelSelector(match_labels=(("app", "web"),))
SCENARIOS = Path(__file__).parents[2] / "scenarios"


def flavor(
    name: str,
    cores: float,
    memory_gi: float,
    price: float,
    *,
    zones: Iterable[str] = ZONES,
    capacity_types: Iterable[str] = (ON_DEMAND, SPOT),
    arch: str = "amd64",
    os: str = "linux",
    max_pods: int = 110,
    labels: Mapping[str, str] | None = None,
    extra: Mapping[str, int] | None = None,
    taints: tuple[Taint, ...] = (),
) -> InstanceType:
    """A flavor offered in every zone and capacity type; spot costs 70 % of on-demand, as in the fake
    cloud provider where spot is always the cheaper offering."""
    capacity = {CPU: cpu(cores), MEMORY: mem(round(memory_gi * GI)), PODS: max_pods * 1000, **(extra or {})}
    offerings = tuple(
        Offering(zone=zone, capacity_type=ct, price=round(price * (0.7 if ct == SPOT else 1.0), 6))
        for zone in zones
        for ct in capacity_types
    )
    all_labels = {INSTANCE_TYPE: name, ARCH: arch, OS: os, INTEGER: str(round(cores)), **(labels or {})}
    return InstanceType(name, capacity, capacity, offerings, all_labels, taints)


def catalog() -> tuple[InstanceType, ...]:
    """Sizes priced by the relative formula (vCPU + GiB / 4), so the cheapest fitting one is the smallest;
    `small` is the one 2-vCPU flavor, so integer label 2 names it."""
    return (
        flavor("small", 2, 4, 3.0),
        flavor("default", 4, 16, 8.0),
        flavor("large", 16, 64, 32.0),
        flavor("arm", 4, 16, 7.0, arch="arm64"),
        flavor("windows", 4, 16, 9.0, os="windows"),
        flavor("gpu", 8, 32, 40.0, labels={"example.com/gpu-vendor": "nvidia"}, extra={GPU: 4000}),
    )


def pod(name: str, cores: float = 0.5, memory: int = 256 * MI, **fields: object) -> Pod:
    return make_pod(name, cores, memory, **fields)  # type: ignore[arg-type]


def web(name: str, cores: float = 0.5, labels: Mapping[str, str] | None = None, **fields: object) -> Pod:
    """A pod of the `app: web` workload that the topology cases select."""
    return make_pod(name, cores, labels={"app": "web", **(labels or {})}, **fields)  # type: ignore[arg-type]


def spread(
    key: str = ZONE,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    selector: LabelSelector = APP,
    **fields: object,
) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(max_skew, key, when, selector, **fields)  # type: ignore[arg-type]


def existing(
    name: str,
    *pods: Pod,
    labels: Mapping[str, str],
    room: float = 0.0,
    taints: tuple[Taint, ...] = (),
    **fields: object,
) -> Node:
    """A running node holding `pods`, with `room` vCPU to spare (none by default, so that a case about
    counting is not also about packing onto it)."""
    used_cpu = sum(p.requests.get(CPU, 0) for p in pods)
    used_memory = sum(p.requests.get(MEMORY, 0) for p in pods)
    allocatable = {CPU: used_cpu + cpu(room), MEMORY: used_memory + mem(8 * GI), PODS: 110_000}
    all_labels = {HOSTNAME: name, ARCH: "amd64", OS: "linux", **labels}
    return Node(name, all_labels, allocatable, taints, pods, **fields)  # type: ignore[arg-type]


def pool(name: str = "default", **fields: object) -> NodePool:
    return NodePool(name=name, **fields)  # type: ignore[arg-type]


def req(key: str, operator: str, *values: str, min_values: int | None = None) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, operator, values, min_values)  # type: ignore[arg-type]


def term(*requirements: NodeSelectorRequirement) -> NodeSelectorTerm:
    return tuple(requirements)


def snap(
    pods: Iterable[Pod],
    flavors: tuple[InstanceType, ...] | None = None,
    pools: tuple[NodePool, ...] | None = None,
    **fields: object,
) -> Snapshot:
    return Snapshot(
        pods=tuple(pods),
        instance_types=catalog() if flavors is None else flavors,
        node_pools=(pool(),) if pools is None else pools,
        **fields,  # type: ignore[arg-type]
    )


def plan_for(snapshot: Snapshot, engine: str) -> Plan:
    """The engine's plan, after the independent validator found nothing wrong with it."""
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == [], validate(snapshot, plan)
    return plan


def claim_of(plan: Plan, pod_key: str) -> PlannedNodeClaim:
    claims = [claim for claim in plan.node_claims if pod_key in claim.pods]
    assert len(claims) == 1, f"{pod_key} is on {len(claims)} new nodes; unschedulable: {plan.unschedulable}"
    return claims[0]


def node_of(plan: Plan, pod_key: str) -> str | None:
    """The existing node a pod was put on, or None when it went to a new node or nowhere."""
    return next((name for name, pods in plan.existing_nodes.items() if pod_key in pods), None)


def placed(plan: Plan) -> set[str]:
    on_claims = {key for claim in plan.node_claims for key in claim.pods}
    return on_claims | {key for pods in plan.existing_nodes.values() for key in pods}


def new_node_labels(plan: Plan, pod_key: str) -> Mapping[str, str]:
    return claim_of(plan, pod_key).labels


def flavors_of(plan: Plan) -> list[str]:
    return sorted(claim.instance_type for claim in plan.node_claims)


def per_domain(snapshot: Snapshot, plan: Plan, key: str, pods: Iterable[str] | None = None) -> dict[str, int]:
    """How many of `pods` (default: every pending pod placed) end in each value of `key`, on new and on
    existing nodes alike."""
    wanted = set(pods) if pods is not None else placed(plan)
    counts: dict[str, int] = {}
    for claim in plan.node_claims:
        for pod_key in claim.pods:
            if pod_key in wanted:
                value = _domain(claim, key)
                counts[value] = counts.get(value, 0) + 1
    labels = {node.name: node.labels for node in snapshot.nodes}
    for name, pod_keys in plan.existing_nodes.items():
        for pod_key in pod_keys:
            if pod_key in wanted:
                value = labels[name].get(key, "<none>")
                counts[value] = counts.get(value, 0) + 1
    return counts


def _domain(claim: PlannedNodeClaim, key: str) -> str:
    if key == ZONE:
        return claim.zone
    if key == CAPACITY_TYPE:
        return claim.capacity_type
    return claim.labels.get(key, "<none>")


def manifest_snapshot(*documents: str, catalog_file: str = "article-catalog-mds.yaml") -> Snapshot:
    """A snapshot from real YAML: the article's catalog (c3-4, c3-8, c3-16 in zone `nova`, a 100m/128Mi
    node agent DaemonSet, NodePool `default` with a 20-CPU limit) plus the documents given."""
    manifests = load_manifests([SCENARIOS / catalog_file])
    add_documents(manifests, "\n---\n".join(documents), "<case>")
    return build_snapshot(manifests)


def pods_from_yaml(text: str) -> list[Pod]:
    """Pending pods from real Pod manifests, with requests computed as the snapshot does (containers, init
    containers, sidecars, overhead, pod-level resources)."""
    return [convert_pod(p, {}) for workload in load_text(text, "<case>").workloads for p in workload.pods()]
