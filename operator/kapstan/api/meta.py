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

from kapstan.api.duration import parse_duration, parse_nillable_duration
from kapstan.api.errors import from_validation_error
from kapstan.api.quantity import to_milli

DEFAULT_NAMESPACE = "default"


def to_milli_checked(value: object) -> int:
    """A non-negative quantity from a manifest, in milli-units."""
    if not isinstance(value, str | int | float):
        raise ValueError(f"invalid quantity {value!r}: expected a number or a string like 500m or 4Gi")
    milli = to_milli(value)
    if milli < 0:
        raise ValueError(f"invalid quantity {value!r}: must not be negative")
    return milli


def parse_price(value: object) -> float:
    """A price per hour from a number or a decimal string; never negative, never NaN."""
    price = math.nan
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            price = float(value)
    if not math.isfinite(price) or price < 0:
        raise ValueError(f"invalid price {value!r}: expected a non-negative number per hour, like 0.0464")
    return price


Milli = Annotated[int, PlainValidator(to_milli_checked)]
"""A non-negative quantity, read as integer milli-units."""
ResourceList = dict[str, Milli]
Duration = Annotated[timedelta, PlainValidator(parse_duration)]
NillableDuration = Annotated[timedelta | None, PlainValidator(parse_nillable_duration)]
"""A duration, or None for "Never"."""
Price = Annotated[float, PlainValidator(parse_price)]
"""A price per hour, from a number or a decimal string."""


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
            namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE) if cls.NAMESPACED else ""
            obj = describe(str(raw.get("kind", cls.__name__)), namespace, str(meta.get("name", "")))
            raise from_validation_error(obj, error, location) from None


def describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
