"""The scheduling snapshot and plan: plain, frozen data that both engines read and write.

Everything the solver needs is here and nothing else: no Kubernetes client objects, no pydantic. The
manifests, the catalog and the live informers all reduce to a `Snapshot`; a `Plan` is what comes back.
Resource amounts are integers in milli-units (1 CPU = 1000, 1 byte of memory = 1000), so no float ever
enters resource math and the Rust engine can use plain integers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# Well-known labels (Kubernetes and Karpenter).
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

_INT64 = re.compile(r"[+-]?[0-9]+")
INT64_MAX = 2**63 - 1


def parse_int64(text: str) -> int | None:
    """A label value as an integer the way Kubernetes reads one for Gt/Lt (`strconv.ParseInt(v, 10,
    64)`): an optional sign and ASCII digits, within int64; anything else is not a number. Python's
    int() would also take spaces, underscores, other scripts' digits and any size."""
    if len(text) > 20 or not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -INT64_MAX - 1 <= number <= INT64_MAX else None


Resources = Mapping[str, int]
"""Resource name to amount in milli-units."""

NodeOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
NODE_OPERATORS: frozenset[str] = frozenset(
    {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"}
)
LabelOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
LABEL_OPERATORS: frozenset[str] = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
TolerationOperator = Literal["Equal", "Exists"]
TolerationEffect = Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"]
"""A toleration's effect; the empty one tolerates every effect."""


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One node selector requirement; `min_values` is Karpenter's flexibility floor for In."""

    key: str
    operator: NodeOperator
    values: tuple[str, ...] = ()
    min_values: int | None = None


NodeSelectorTerm = tuple[NodeSelectorRequirement, ...]
"""Requirements ANDed together; several terms are ORed."""


@dataclass(frozen=True)
class PreferredNodeTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True)
class LabelSelectorRequirement:
    key: str
    operator: LabelOperator
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """A metav1.LabelSelector. An empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for expr in self.match_expressions:
            present = expr.key in labels
            if expr.operator == "In":
                if not present or labels[expr.key] not in expr.values:
                    return False
            elif expr.operator == "NotIn":
                if present and labels[expr.key] in expr.values:
                    return False
            elif expr.operator == "Exists":
                if not present:
                    return False
            elif present:  # DoesNotExist
                return False
        return True


@dataclass(frozen=True)
class PodAffinityTerm:
    """A required (anti-)affinity term, already resolved: the selector includes matchLabelKeys.

    `namespaces` is the set of namespaces whose pods the selector looks at; `all_namespaces` is set by an
    empty namespaceSelector.
    """

    selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...]
    all_namespaces: bool = False

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if not self.all_namespaces and namespace not in self.namespaces:
            return False
        return self.selector.matches(labels)


@dataclass(frozen=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: TolerationOperator = "Equal"
    value: str = ""
    effect: TolerationEffect = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        # An empty key with Equal is invalid in Kubernetes; it only matches an empty-key taint.
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True)
class Taint:
    key: str
    effect: TaintEffect
    value: str = ""

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


@dataclass(frozen=True)
class TopologySpreadConstraint:
    """A topology spread constraint; the selector already includes matchLabelKeys."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: Literal["Honor", "Ignore"] = "Honor"
    node_taints_policy: Literal["Honor", "Ignore"] = "Ignore"


@dataclass(frozen=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    host_ip: str = ""

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("", "0.0.0.0", "::")
        return self.host_ip in wildcard or other.host_ip in wildcard or self.host_ip == other.host_ip


@dataclass(frozen=True)
class Pod:
    """The scheduling-relevant part of a pod. `requests` already applies the init-container and sidecar
    rules, the pod overhead and `pods: 1000` (one pod in milli-units)."""

    namespace: str
    name: str
    requests: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[NodeSelectorTerm, ...] = ()
    preferred_terms: tuple[PreferredNodeTerm, ...] = ()
    affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    spread: tuple[TopologySpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    terminating: bool = False
    """A bound pod being deleted: it holds its room and inter-pod affinity still counts it, but
    kube-scheduler's PodTopologySpread no longer does (it skips pods with a deletionTimestamp)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Offering:
    """Where and how a flavor can be bought: one zone, one capacity type, one price."""

    zone: str
    capacity_type: str = "on-demand"
    price: float = 0.0
    available: bool = True


@dataclass(frozen=True)
class InstanceType:
    """A flavor. `labels` are the node labels every node of this flavor carries (arch, os, instance-type,
    custom ones); zone and capacity type come from the chosen offering."""

    name: str
    capacity: Resources
    allocatable: Resources
    offerings: tuple[Offering, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class NodePool:
    """A NodePool as the solver sees it: the template, the limits and what is already used against them."""

    name: str
    requirements: tuple[NodeSelectorRequirement, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    weight: int = 0
    limits: Resources = field(default_factory=dict)
    """Resource limits in milli-units; the key `nodes` limits the node count (also in milli-units)."""
    usage: Resources = field(default_factory=dict)
    """What the pool's existing nodes and in-flight claims already count against `limits`."""
    instance_types: tuple[str, ...] | None = None
    """Names of the flavors this pool may use (its NodeClass's catalog); None means every flavor."""

    def new_node_labels(self, flavor: InstanceType, zone: str, capacity_type: str) -> dict[str, str]:
        """The labels a new node of this pool, flavor and offering carries: the flavor's, the pool's template
        labels over them, then the pool's name and the offering's zone and capacity type (in this order,
        which both engines' label maps keep)."""
        return {**flavor.labels, **self.labels, NODEPOOL: self.name, ZONE: zone, CAPACITY_TYPE: capacity_type}


CORDON_TAINT = Taint("node.kubernetes.io/unschedulable", "NoSchedule")
"""The taint kube-scheduler checks a cordoned node's pods against (`spec.unschedulable` itself)."""


@dataclass(frozen=True)
class Node:
    """An existing node (or an in-flight NodeClaim that already has its flavor), with the pods bound to it."""

    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    taints: tuple[Taint, ...] = ()
    pods: tuple[Pod, ...] = ()
    node_pool: str | None = None
    unschedulable: bool = False
    refused: tuple[str, ...] = ()
    """Keys of pending pods kube-scheduler would not bind here though a plan put them here (the
    provisioner's safety net, ``controllers/scheduler_refusals.py``): this node has no room for them."""

    def closed_to(self, pod: Pod) -> bool:
        """Whether no pending pod ``pod`` may be planned here: cordoned for it, or refused here."""
        return self.cordoned_for(pod) or pod.key in self.refused

    def cordoned_for(self, pod: Pod) -> bool:
        """Whether the node's cordon keeps the pod off: kube-scheduler's NodeUnschedulable admits a pod
        that tolerates the unschedulable taint (DaemonSet pods carry that toleration)."""
        return self.unschedulable and not any(t.tolerates(CORDON_TAINT) for t in pod.tolerations)


@dataclass(frozen=True)
class DaemonSet:
    """A DaemonSet's pod template: it costs its requests on every node whose labels and taints admit it."""

    name: str
    pod: Pod


@dataclass(frozen=True)
class Snapshot:
    pods: tuple[Pod, ...]
    """Pending pods to place."""
    instance_types: tuple[InstanceType, ...]
    node_pools: tuple[NodePool, ...]
    nodes: tuple[Node, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedNodeClaim:
    node_pool: str
    instance_type: str
    zone: str
    capacity_type: str
    price_per_hour: float
    pods: tuple[str, ...]
    """Keys (`namespace/name`) of the pods placed on it, in placement order."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """The labels the node will carry: pool template, flavor, zone, capacity type, narrowed requirements."""
    alternatives: tuple[str, ...] = ()
    """Other flavors that carry exactly these pods in the same zone and capacity type, cheapest first
    (`greedy/alternatives.py`): what a launch falls back to when the chosen flavor cannot be had."""


@dataclass(frozen=True)
class Plan:
    engine: str
    node_claims: tuple[PlannedNodeClaim, ...]
    existing_nodes: Mapping[str, tuple[str, ...]]
    """Node name to the pending pods placed on it."""
    unschedulable: Mapping[str, str]
    """Pod key to a reason a user can act on."""
    solve_seconds: float = 0.0

    @property
    def total_price_per_hour(self) -> float:
        return round(sum(claim.price_per_hour for claim in self.node_claims), 6)

    def to_json(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "nodeClaims": [
                {
                    "nodePool": c.node_pool,
                    "instanceType": c.instance_type,
                    "zone": c.zone,
                    "capacityType": c.capacity_type,
                    "pricePerHour": c.price_per_hour,
                    "pods": list(c.pods),
                    "alternatives": list(c.alternatives),
                }
                for c in self.node_claims
            ],
            "existingNodes": [
                {"node": name, "pods": list(pods)}
                for name, pods in sorted(self.existing_nodes.items())
                if pods
            ],
            "unschedulable": [{"pod": pod, "reason": reason} for pod, reason in self.unschedulable.items()],
            "totalPricePerHour": self.total_price_per_hour,
            "solveSeconds": self.solve_seconds,
        }
