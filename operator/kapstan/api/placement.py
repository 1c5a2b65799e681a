"""Where a pod may run, as the Kubernetes API writes it: label and node selectors, node and pod
(anti-)affinity, taints and tolerations, topology spread constraints.

The pod, node and NodePool models (``core``, ``karpenter``, ``capi``) are made of these terms. Operators and
values are checked when a manifest is parsed, so the engines read only requirements that mean something;
``snapshot_pods`` resolves the terms' namespaces and matchLabelKeys.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from kapstan.api.errors import shown
from kapstan.api.meta import Int32, KubeModel, Weight
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
