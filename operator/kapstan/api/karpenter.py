"""Karpenter's API as kapstan reads it: NodePool and NodeClaim (karpenter.sh/v1) and the Cluster API
NodeClass (karpenter.cluster.x-k8s.io/v1alpha1).

These are the objects users already write for Karpenter; kapstan accepts them unchanged and rejects, with
the field named, what Karpenter's own validation would reject.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta
from fractions import Fraction
from typing import Annotated, ClassVar, Literal

from pydantic import Field, PlainValidator, ValidationInfo, field_validator, model_validator

from kapstan.api.errors import shown
from kapstan.api.meta import (
    BudgetWindow,
    ClampedMilli,
    Duration,
    KubeModel,
    KubeObject,
    NillableDuration,
    Price,
    ResourceList,
    TemplateMeta,
    to_milli_checked,
)
from kapstan.api.placement import NodeSelectorRequirement, Taint
from kapstan.api.wellknown import INITIALIZED
from kapstan.scheduling.model import NODE_OPERATORS

NODECLASS_GROUP = "karpenter.cluster.x-k8s.io"
NODECLASS_KIND = "ClusterAPINodeClass"


class Requirement(NodeSelectorRequirement):
    """A NodePool requirement: Karpenter adds Gte/Lte and `minValues`, the least number of distinct
    values the chosen instance types must cover."""

    OPERATORS: ClassVar[frozenset[str]] = NODE_OPERATORS

    min_values: int | None = Field(default=None, ge=1, le=50)
    """At most 50, as Karpenter's CRD says."""

    @field_validator("values")
    @classmethod
    def _comparison_not_negative(cls, values: list[str], info: ValidationInfo) -> list[str]:
        # Karpenter's CRD: `int(x.values[0]) >= 0` for Gt, Lt, Gte and Lte.
        if info.data.get("operator") in ("Gt", "Lt", "Gte", "Lte") and values and values[0].startswith("-"):
            raise ValueError(
                f"operator {info.data['operator']} needs a value of 0 or more, got {shown(values[0])}"
            )
        return values

    @field_validator("min_values")
    @classmethod
    def _enough_values(cls, min_values: int | None, info: ValidationInfo) -> int | None:
        values = info.data.get("values")
        if min_values and info.data.get("operator") == "In" and values and min_values > len(values):
            raise ValueError(f"minValues {min_values} is more than the {len(values)} values given")
        return min_values


class NodeClassReference(KubeModel):
    group: str
    kind: str
    name: str


class NodeClaimTemplateSpec(KubeModel):
    requirements: list[Requirement] = Field(default_factory=list)
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[Taint] = Field(default_factory=list)
    node_class_ref: NodeClassReference
    expire_after: NillableDuration = timedelta(hours=720)
    termination_grace_period: Duration | None = None


class NodeClaimTemplate(KubeModel):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: NodeClaimTemplateSpec


# Karpenter's CRD pattern for a budget's schedule, with each of the five fields one cron token (its
# `(.+)\s(.+)...` would also pass six or seven fields, which its cron parser then rejects).
_SCHEDULE = re.compile(
    r"@(annually|yearly|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*,/?-]+(\s+[0-9A-Za-z*,/?-]+){4}"
)
_BUDGET_NODES = re.compile(r"(100|[0-9]{1,2})%|[0-9]+")


class Budget(KubeModel):
    """How many nodes disruption may take at once, optionally only during a cron window."""

    nodes: str = "10%"
    schedule: str | None = None
    duration: BudgetWindow | None = None
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] = Field(default_factory=list)

    @field_validator("nodes", mode="before")
    @classmethod
    def _count_or_percent(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
            value = str(value)
        if not isinstance(value, str) or not _BUDGET_NODES.fullmatch(value):
            raise ValueError(
                f'invalid budget {shown(value)}: expected a node count ("3") or a percentage ("10%")'
            )
        return value

    @field_validator("schedule")
    @classmethod
    def _cron_shape(cls, value: str | None) -> str | None:
        if value is not None and not _SCHEDULE.fullmatch(value):
            raise ValueError(
                f"invalid schedule {shown(value)}: expected five cron fields (minute hour day month weekday) "
                "or a macro such as @daily"
            )
        return value

    @model_validator(mode="after")
    def _window_is_complete(self) -> Budget:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("schedule and duration must be set together")
        return self


class Disruption(KubeModel):
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = "WhenEmptyOrUnderutilized"
    consolidate_after: NillableDuration = timedelta(0)
    budgets: list[Budget] = Field(default_factory=lambda: [Budget()])


class NodePoolSpec(KubeModel):
    template: NodeClaimTemplate
    disruption: Disruption = Field(default_factory=Disruption)
    limits: dict[str, ClampedMilli] = Field(default_factory=dict)
    """Resource limits in milli-units; `nodes` limits the node count. Beyond int64 is no limit."""
    weight: int | None = Field(default=None, ge=1, le=100)


class NodePool(KubeObject):
    NAMESPACED: ClassVar[bool] = False

    spec: NodePoolSpec


class NodeClaimResources(KubeModel):
    requests: ResourceList = Field(default_factory=dict)


class NodeClaimSpec(NodeClaimTemplateSpec):
    resources: NodeClaimResources = Field(default_factory=NodeClaimResources)


class StatusCondition(KubeModel):
    type: str
    status: str = "Unknown"


class NodeClaimStatus(KubeModel):
    provider_id: str = Field(default="", alias="providerID")
    node_name: str = ""
    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList = Field(default_factory=dict)
    conditions: list[StatusCondition] = Field(default_factory=list)


class NodeClaim(KubeObject):
    NAMESPACED: ClassVar[bool] = False

    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)

    @property
    def initialized(self) -> bool:
        return any(c.type == INITIALIZED and c.status == "True" for c in self.status.conditions)


@dataclass(frozen=True)
class Threshold:
    """An eviction threshold: an amount in milli-units, or a fraction of capacity."""

    milli: int = 0
    fraction: Fraction = Fraction(0)

    def of(self, capacity: int) -> int:
        return self.milli + math.ceil(capacity * self.fraction)


# The kubelet reads a percentage as a decimal number (`strconv.ParseFloat`); a fraction like 1/0 is none.
_PERCENT = re.compile(r"(\d{1,3}(\.\d{0,6})?|\.\d{1,6})%")


def _threshold(value: object) -> Threshold:
    if isinstance(value, str) and value.endswith("%"):
        fraction = Fraction(value[:-1]) / 100 if _PERCENT.fullmatch(value) else Fraction(-1)
        if not 0 <= fraction <= 1:
            raise ValueError(f"invalid threshold {shown(value)}: expected a percentage between 0% and 100%")
        return Threshold(fraction=fraction)
    return Threshold(milli=to_milli_checked(value))


class KubeletConfiguration(KubeModel):
    """What the kubelet keeps for itself; capacity minus these is what pods get (allocatable)."""

    kube_reserved: ResourceList = Field(default_factory=dict)
    system_reserved: ResourceList = Field(default_factory=dict)
    eviction_hard: dict[str, Annotated[Threshold, PlainValidator(_threshold)]] = Field(default_factory=dict)
    """Signal to threshold, e.g. {"memory.available": "100Mi"} or {"nodefs.available": "10%"}."""


class ConfigMapReference(KubeModel):
    name: str
    namespace: str = "default"


class NodeClassSpec(KubeModel):
    kubelet: KubeletConfiguration = Field(default_factory=KubeletConfiguration)
    price_table: dict[str, Price] = Field(default_factory=dict)
    """Flavor name to price per hour; wins over `priceTableRef` for the flavors it names."""
    price_table_ref: ConfigMapReference | None = None
    """A ConfigMap whose `data` maps flavor name to price per hour."""


class ClusterAPINodeClass(KubeObject):
    NAMESPACED: ClassVar[bool] = False

    spec: NodeClassSpec = Field(default_factory=NodeClassSpec)
