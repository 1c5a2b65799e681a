"""The scheduling-relevant part of core Kubernetes objects: Pod, Node, Namespace, ConfigMap, the workload
controllers that stamp out pods, DaemonSet and PodDisruptionBudget.

Only what kube-scheduler and Karpenter read is modelled; everything else in a manifest is ignored. The
rules that turn a pod spec into one number per resource (init containers, sidecars, overhead) live here
because they are Kubernetes semantics, not solver policy.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from kapstan.api.errors import shown
from kapstan.api.meta import (
    HostPortNumber,
    Int32,
    KubeModel,
    KubeObject,
    ObjectMeta,
    OwnerReference,
    Port,
    ResourceList,
    TemplateMeta,
    Weight,
)
from kapstan.scheduling.model import LABEL_OPERATORS, LabelOperator, NodeOperator, TaintEffect, parse_int64


def check_operator(value: object, allowed: Iterable[str]) -> object:
    """Reject an unknown selector operator with the list a user can pick from."""
    order = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
    choices = [op for op in order if op in allowed]
    if value not in choices:
        raise ValueError(f'unknown operator "{value}" (expected one of {", ".join(choices)})')
    return value


def check_values(operator: object, values: list[str]) -> list[str]:
    """The values an operator takes: some for In/NotIn, none for Exists/DoesNotExist, one integer for
    the comparisons."""
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"operator {operator} takes no values")
    if operator in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or parse_int64(values[0]) is None):
        shown_values = ", ".join(shown(v) for v in values[:3]) + (", ..." if len(values) > 3 else "")
        raise ValueError(f"operator {operator} needs exactly one integer value (int64), got [{shown_values}]")
    return values


class OperatorRequirement(KubeModel):
    """A key, an operator among the class's `OPERATORS` and values that fit it: what label selector and
    node selector requirements share (a subclass narrows `operator` to its own choices)."""

    OPERATORS: ClassVar[frozenset[str]]

    key: str
    operator: str
    values: list[str] = Field(default_factory=list, validate_default=True)

    @field_validator("operator", mode="before")
    @classmethod
    def _known_operator(cls, value: object) -> object:
        return check_operator(value, cls.OPERATORS)

    @field_validator("values")
    @classmethod
    def _values_fit_operator(cls, values: list[str], info: ValidationInfo) -> list[str]:
        return check_values(info.data.get("operator"), values)


class LabelSelectorRequirement(OperatorRequirement):
    OPERATORS: ClassVar[frozenset[str]] = LABEL_OPERATORS

    operator: LabelOperator


class LabelSelector(KubeModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class NodeSelectorRequirement(OperatorRequirement):
    """A node selector requirement; the Karpenter variant widens the operators and adds minValues."""

    OPERATORS: ClassVar[frozenset[str]] = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})

    operator: NodeOperator


class NodeSelectorTerm(KubeModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(KubeModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class PreferredSchedulingTerm(KubeModel):
    weight: Weight
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTerm(KubeModel):
    label_selector: LabelSelector | None = None
    """None selects no pods (Kubernetes semantics), unlike an empty selector, which selects all."""
    namespaces: list[str] = Field(default_factory=list)
    topology_key: str
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)


class WeightedPodAffinityTerm(KubeModel):
    weight: Weight
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    """Used for both podAffinity and podAntiAffinity."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(KubeModel):
    node_affinity: NodeAffinity = Field(default_factory=NodeAffinity)
    pod_affinity: PodAffinity = Field(default_factory=PodAffinity)
    pod_anti_affinity: PodAffinity = Field(default_factory=PodAffinity)


class Taint(KubeModel):
    key: str
    value: str = ""
    effect: TaintEffect


class Toleration(KubeModel):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""


class TopologySpreadConstraint(KubeModel):
    max_skew: Int32 = Field(ge=1)
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = Field(default=None, ge=1)
    node_affinity_policy: Literal["Honor", "Ignore"] = "Honor"
    node_taints_policy: Literal["Honor", "Ignore"] = "Ignore"
    match_label_keys: list[str] = Field(default_factory=list)


class ContainerPort(KubeModel):
    container_port: Port
    host_port: HostPortNumber = 0
    """0: no port on the node."""
    protocol: str = "TCP"
    host_ip: str = Field(default="", alias="hostIP")


class ResourceRequirements(KubeModel):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)

    def effective_requests(self) -> dict[str, int]:
        # The API server defaults a missing request to its limit.
        return {**self.limits, **self.requests}


class Container(KubeModel):
    name: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = Field(default_factory=list)
    restart_policy: str | None = None

    @property
    def is_sidecar(self) -> bool:
        """An init container with `restartPolicy: Always` keeps running beside the app containers."""
        return self.restart_policy == "Always"


class PodSpec(KubeModel):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity = Field(default_factory=Affinity)
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    node_name: str = ""
    priority: Int32 | None = None
    host_network: bool = False
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    """Pod-level resources (KEP-2837, on by default since Kubernetes 1.34)."""

    def effective_requests(self) -> dict[str, int]:
        """What the pod asks of a node, as kube-scheduler computes it (`resourcehelper.PodRequests`):
        the containers' requests, replaced by the pod-level ones for the resources those set, plus the
        overhead."""
        total = self.container_requests()
        total.update(self.pod_level_requests(total))
        _add(total, self.overhead)
        return total

    def pod_level_requests(self, containers: Mapping[str, int]) -> dict[str, int]:
        """The pod-level requests after the API server's defaulting: a resource with a pod-level limit
        and no pod-level request gets the containers' sum when they request it, else the limit. Only
        the resources pod level supports count (cpu, memory, hugepages-*)."""
        requests = dict(self.resources.requests)
        for name, limit in self.resources.limits.items():
            requests.setdefault(name, containers.get(name, limit))
        return {name: amount for name, amount in requests.items() if _pod_level_resource(name)}

    def container_requests(self) -> dict[str, int]:
        """The containers' requests (`AggregateContainerRequests`): app containers plus sidecars run
        together; each regular init container runs alone beside the sidecars started before it; the
        pod needs the larger of the two."""
        total: dict[str, int] = {}
        for container in self.containers:
            _add(total, container.resources.effective_requests())
        init_peak: dict[str, int] = {}
        sidecars: dict[str, int] = {}
        for container in self.init_containers:
            requests = container.resources.effective_requests()
            if container.is_sidecar:
                _add(total, requests)
                _add(sidecars, requests)
                running = dict(sidecars)
            else:
                running = dict(requests)
                _add(running, sidecars)
            _max(init_peak, running)
        _max(total, init_peak)
        return total

    def host_ports(self) -> list[ContainerPort]:
        """Ports bound on the node. With hostNetwork every container port is one (the API server
        defaults hostPort to containerPort); sidecars hold theirs for the pod's whole life."""
        containers = [*self.containers, *(c for c in self.init_containers if c.is_sidecar)]
        ports = [port for container in containers for port in container.ports]
        if self.host_network:
            ports = [
                port if port.host_port else port.model_copy(update={"host_port": port.container_port})
                for port in ports
            ]
        return [port for port in ports if port.host_port > 0]


def _pod_level_resource(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def _max(into: dict[str, int], other: dict[str, int]) -> None:
    for name, amount in other.items():
        into[name] = max(into.get(name, 0), amount)


class PodTemplateSpec(KubeModel):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: PodSpec


class PodStatus(KubeModel):
    phase: str = ""


class Pod(KubeObject):
    spec: PodSpec
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def finished(self) -> bool:
        """Terminal pods hold no resources and are never scheduled again."""
        return self.status.phase in ("Succeeded", "Failed")

    def pods(self) -> list[Pod]:
        return [self]


class _Controller(KubeObject, ABC):
    """A workload that stamps out copies of a pod template."""

    @abstractmethod
    def replica_count(self) -> int: ...

    @abstractmethod
    def template(self) -> PodTemplateSpec: ...

    def pods(self, have: int = 0, taken: AbstractSet[str] = frozenset()) -> list[Pod]:
        """The pods this workload wants besides the `have` it already has, in the workload's namespace,
        named `<workload>-<i>` from 0 and skipping the names in `taken` (pods listed on their own)."""
        wanted = max(self.replica_count() - have, 0)
        names = (f"{self.name}-{index}" for index in itertools.count())
        free = (name for name in names if name not in taken)
        return [stamp(self, name, self.template()) for name in itertools.islice(free, wanted)]


def stamp(owner: KubeObject, name: str, template: PodTemplateSpec) -> Pod:
    """A pod made from a template, in its owner's namespace."""
    metadata = ObjectMeta(
        name=name,
        namespace=owner.namespace,
        labels=template.metadata.labels,
        annotations=template.metadata.annotations,
        owner_references=[OwnerReference(api_version=owner.api_version, kind=owner.kind, name=owner.name)],
    )
    return Pod(api_version="v1", kind="Pod", metadata=metadata, spec=template.spec)


class ReplicatedSpec(KubeModel):
    replicas: Int32 = Field(default=1, ge=0)
    template: PodTemplateSpec


class Deployment(_Controller):
    spec: ReplicatedSpec

    def replica_count(self) -> int:
        return self.spec.replicas

    def template(self) -> PodTemplateSpec:
        return self.spec.template


class ReplicaSet(Deployment):
    pass


class StatefulSet(Deployment):
    pass


class JobSpec(KubeModel):
    parallelism: Int32 = Field(default=1, ge=0)
    completions: Int32 | None = Field(default=None, ge=0)
    template: PodTemplateSpec


class Job(_Controller):
    spec: JobSpec

    def replica_count(self) -> int:
        """The pods running at once: parallelism, but never more than the completions left to do."""
        if self.spec.completions is None:
            return self.spec.parallelism
        return min(self.spec.parallelism, self.spec.completions)

    def template(self) -> PodTemplateSpec:
        return self.spec.template


Workload = Pod | Deployment | ReplicaSet | StatefulSet | Job
"""Anything that yields pods to schedule, in the order the manifests list them."""


class DaemonSetSpec(KubeModel):
    template: PodTemplateSpec


class DaemonSet(KubeObject):
    spec: DaemonSetSpec

    def pod(self) -> Pod:
        """The pod the DaemonSet puts on each node, named after the DaemonSet."""
        return stamp(self, self.name, self.spec.template)


class PodDisruptionBudgetSpec(KubeModel):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None


class PodDisruptionBudget(KubeObject):
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)


class NodeSpec(KubeModel):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False
    provider_id: str = Field(default="", alias="providerID")


class NodeStatus(KubeModel):
    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList = Field(default_factory=dict)


class Node(KubeObject):
    NAMESPACED: ClassVar[bool] = False

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def allocatable(self) -> dict[str, int]:
        return dict(self.status.allocatable or self.status.capacity)


class Namespace(KubeObject):
    NAMESPACED: ClassVar[bool] = False


class ConfigMap(KubeObject):
    data: dict[str, str] = Field(default_factory=dict)
