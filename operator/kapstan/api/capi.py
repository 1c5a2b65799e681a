"""Cluster API objects on the management side (cluster.x-k8s.io/v1beta2): MachineDeployment, Cluster,
ClusterClass, KubeadmConfigTemplate, and any provider's infrastructure machine template.

The catalog reads flavors from these and the provider scales them. Infrastructure templates stay
untyped: kapstan reaches into them by path (see `kapstan.catalog.contract`) so that every provider works
without a model of its own.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kapstan.api.meta import KubeModel, KubeObject, TemplateMeta
from kapstan.api.placement import LabelSelector, Taint

CAPI_GROUP = "cluster.x-k8s.io"
INFRASTRUCTURE_GROUP_PREFIX = "infrastructure."
BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io"


class ObjectReference(KubeModel):
    """A reference to a template: `{apiGroup, kind, name}` in v1beta2 refs, `{apiVersion, kind, name}` in
    ClusterClass template refs. The namespace is always the referring object's."""

    api_group: str = ""
    api_version: str = ""
    kind: str
    name: str

    @property
    def group(self) -> str:
        return self.api_group or self.api_version.rpartition("/")[0]


class Bootstrap(KubeModel):
    config_ref: ObjectReference | None = None


class MachineSpec(KubeModel):
    cluster_name: str = ""
    version: str = ""
    failure_domain: str = ""
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)
    infrastructure_ref: ObjectReference


class MachineTemplateSpec(KubeModel):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: MachineSpec


class MachineDeploymentSpec(KubeModel):
    cluster_name: str
    replicas: int | None = Field(default=None, ge=0)
    selector: LabelSelector = Field(default_factory=LabelSelector)
    template: MachineTemplateSpec


class MachineDeployment(KubeObject):
    spec: MachineDeploymentSpec


class ClassReference(KubeModel):
    name: str
    namespace: str = ""


class TopologyMachineDeployment(KubeModel):
    """One worker pool of a managed topology: an instance of a ClusterClass worker class."""

    class_: str = Field(alias="class")
    name: str
    replicas: int | None = Field(default=None, ge=0)
    failure_domain: str = ""
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)


class TopologyWorkers(KubeModel):
    machine_deployments: list[TopologyMachineDeployment] = Field(default_factory=list)


class Topology(KubeModel):
    class_ref: ClassReference
    version: str = ""
    workers: TopologyWorkers = Field(default_factory=TopologyWorkers)


class ClusterSpec(KubeModel):
    topology: Topology | None = None
    paused: bool = False


class Cluster(KubeObject):
    spec: ClusterSpec = Field(default_factory=ClusterSpec)

    @property
    def class_namespace(self) -> str:
        """Where the ClusterClass lives: its own namespace unless the topology names another."""
        topology = self.spec.topology
        return (topology.class_ref.namespace if topology else "") or self.namespace


class TemplateRefHolder(KubeModel):
    template_ref: ObjectReference


class MachineDeploymentClass(KubeModel):
    """A worker class. `metadata` is what v1beta2 stamps on every MD (and Machine) of the class."""

    class_: str = Field(alias="class")
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    bootstrap: TemplateRefHolder
    infrastructure: TemplateRefHolder


class ClusterClassWorkers(KubeModel):
    machine_deployments: list[MachineDeploymentClass] = Field(default_factory=list)


class ClusterClassSpec(KubeModel):
    workers: ClusterClassWorkers = Field(default_factory=ClusterClassWorkers)


class ClusterClass(KubeObject):
    spec: ClusterClassSpec = Field(default_factory=ClusterClassSpec)


class NodeRegistration(KubeModel):
    taints: list[Taint] = Field(default_factory=list)


class JoinConfiguration(KubeModel):
    node_registration: NodeRegistration = Field(default_factory=NodeRegistration)


class KubeadmConfigSpec(KubeModel):
    join_configuration: JoinConfiguration = Field(default_factory=JoinConfiguration)


class KubeadmConfigTemplateResource(KubeModel):
    spec: KubeadmConfigSpec = Field(default_factory=KubeadmConfigSpec)


class KubeadmConfigTemplateSpec(KubeModel):
    template: KubeadmConfigTemplateResource = Field(default_factory=KubeadmConfigTemplateResource)


class KubeadmConfigTemplate(KubeObject):
    spec: KubeadmConfigTemplateSpec = Field(default_factory=KubeadmConfigTemplateSpec)

    @property
    def taints(self) -> list[Taint]:
        """The taints a node joining with this template registers with."""
        return self.spec.template.spec.join_configuration.node_registration.taints


class InfrastructureMachineTemplate(KubeObject):
    """Any provider's `*MachineTemplate`, kept as plain data and read by path."""

    spec: dict[str, Any] = Field(default_factory=dict)
    status: dict[str, Any] = Field(default_factory=dict)
