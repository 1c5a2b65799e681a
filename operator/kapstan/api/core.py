"""The scheduling-relevant part of core Kubernetes objects: Pod, Node, Namespace, ConfigMap, the workload
controllers that stamp out pods, DaemonSet and PodDisruptionBudget (the placement terms they are made of,
selectors, affinity, taints, are in ``placement``).

Only what kube-scheduler and Karpenter read is modelled; everything else in a manifest is ignored. The
rules that turn a pod spec into one number per resource (init containers, sidecars, overhead) live here
because they are Kubernetes semantics, not solver policy.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import ClassVar

from pydantic import Field

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
)
from kapstan.api.placement import Affinity, LabelSelector, Taint, Toleration, TopologySpreadConstraint


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
