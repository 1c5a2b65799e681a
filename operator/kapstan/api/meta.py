"""What every Kubernetes model here shares: camelCase aliases, tolerance of unknown fields and nulls,
object metadata, and the field types for quantities, durations and prices.

Manifests are written by people and by other controllers; the models read the fields the autoscaler
needs and ignore the rest, so a new field upstream never breaks parsing.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from kapstan.api.duration import budget_window, karpenter_duration, karpenter_nillable_duration
from kapstan.api.errors import from_validation_error, shown
from kapstan.api.quantity import to_bounded_milli

DEFAULT_NAMESPACE = "default"


def to_milli_checked(value: object, *, clamp: bool = False) -> int:
    """A quantity from a manifest, in milli-units: never negative, at most an int64 (`to_bounded_milli`)."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValueError(f"invalid quantity {shown(value)}: expected a number or a string like 500m or 4Gi")
    return to_bounded_milli(value, clamp=clamp)


def to_milli_clamped(value: object) -> int:
    return to_milli_checked(value, clamp=True)


def parse_price(value: object) -> float:
    """A price per hour from a number or a decimal string; never negative, never NaN."""
    price = math.nan
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        # float() of an integer too big for a double raises OverflowError, not ValueError.
        with contextlib.suppress(ValueError, OverflowError):
            price = float(value)
    if not math.isfinite(price) or price < 0:
        raise ValueError(
            f"invalid price {shown(value)}: expected a non-negative number per hour, like 0.0464"
        )
    return price


Milli = Annotated[int, PlainValidator(to_milli_checked)]
"""A non-negative quantity, read as integer milli-units."""
ResourceList = dict[str, Milli]
ClampedMilli = Annotated[int, PlainValidator(to_milli_clamped)]
"""A limit: like Milli, but a value beyond int64 means "no limit" and becomes the largest one."""
Duration = Annotated[timedelta, PlainValidator(karpenter_duration)]
"""A Karpenter duration: whole hours, minutes and seconds, as its CRD's pattern allows."""
NillableDuration = Annotated[timedelta | None, PlainValidator(karpenter_nillable_duration)]
"""A duration, or None for "Never"."""
BudgetWindow = Annotated[timedelta, PlainValidator(budget_window)]
"""How long a disruption budget's window stays open: hours and minutes."""
Price = Annotated[float, PlainValidator(parse_price)]
"""A price per hour, from a number or a decimal string."""


INT32_MAX = 2**31 - 1
Int32 = Annotated[int, Field(strict=True, ge=-(2**31), le=INT32_MAX)]
"""A count the API server keeps as int32 (replicas, maxSkew, priority); an integer, never a string."""
Port = Annotated[int, Field(strict=True, ge=1, le=65535)]
HostPortNumber = Annotated[int, Field(strict=True, ge=0, le=65535)]
"""A hostPort: 0 means none."""
Weight = Annotated[int, Field(strict=True, ge=1, le=100)]
"""A preference weight, 1..100 as the API server validates it."""


class KubeModel(BaseModel):
    """A part of a Kubernetes object: camelCase on the wire, unknown fields ignored, nulls as absent."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_absent(cls, data: Any) -> Any:
        # `matchLabels: null` and friends are common in real manifests; treat them as unset.
        if isinstance(data, Mapping):
            return {key: value for key, value in data.items() if value is not None}
        return data


class OwnerReference(KubeModel):
    api_version: str = ""
    kind: str
    name: str
    controller: bool = False


class ObjectMeta(KubeModel):
    name: str
    namespace: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    deletion_timestamp: datetime | None = None
    """Set when deletion was asked for; the object goes once its finalizers are done."""


class TemplateMeta(KubeModel):
    """The metadata of an embedded template: labels and annotations, no name."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class KubeObject(KubeModel):
    """A top-level object. Subclasses set `NAMESPACED` to False when cluster-scoped."""

    NAMESPACED: ClassVar[bool] = True

    api_version: str
    kind: str
    metadata: ObjectMeta

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        """The namespace, defaulted like kubectl does; empty for cluster-scoped objects."""
        return (self.metadata.namespace or DEFAULT_NAMESPACE) if self.NAMESPACED else ""

    @property
    def ref(self) -> str:
        """How errors name this object: `Kind namespace/name`, or `Kind name` when cluster-scoped."""
        return describe(self.kind, self.namespace, self.name)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], location: str = "") -> Self:
        """Validate a decoded object; any problem becomes a ManifestError naming the object and field."""
        try:
            return cls.model_validate(raw)
        except ValidationError as error:
            metadata = raw.get("metadata")
            meta = metadata if isinstance(metadata, Mapping) else {}
            namespace = _text(meta.get("namespace") or DEFAULT_NAMESPACE) if cls.NAMESPACED else ""
            kind = raw.get("kind")
            obj = describe(
                kind if isinstance(kind, str) else cls.__name__, namespace, _text(meta.get("name", ""))
            )
            raise from_validation_error(obj, error, location) from None


def _text(value: object) -> str:
    """A name as an error shows it: a string as is, anything else quoted without expanding it."""
    return value if isinstance(value, str) else shown(value)


def describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
