"""Small builders for OpenAPI v3 schemas, so the CRDs read as the API they describe.

Every builder returns a structural schema (each node has a ``type``), as the API server requires of CRDs.
``rule`` adds a CEL ``x-kubernetes-validations`` entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Schema = dict[str, Any]


def string(description: str = "", **extra: Any) -> Schema:
    return _with({"type": "string"}, description, extra)


def integer(description: str = "", **extra: Any) -> Schema:
    return _with({"type": "integer", "format": "int32"}, description, extra)


def date_time(description: str = "") -> Schema:
    return _with({"type": "string", "format": "date-time"}, description, {})


def array(items: Schema, description: str = "", **extra: Any) -> Schema:
    return _with({"type": "array", "items": items}, description, extra)


def obj(
    properties: Mapping[str, Schema],
    required: Sequence[str] = (),
    description: str = "",
    **extra: Any,
) -> Schema:
    schema: Schema = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    return _with(schema, description, extra)


def string_map(description: str = "", **extra: Any) -> Schema:
    return _with({"type": "object", "additionalProperties": {"type": "string"}}, description, extra)


# Kubernetes' resource.Quantity, as controller-gen writes it.
QUANTITY: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    "x-kubernetes-int-or-string": True,
}


def quantity_map(description: str = "") -> Schema:
    return _with({"type": "object", "additionalProperties": QUANTITY}, description, {})


def rule(schema: Schema, cel: str, message: str) -> Schema:
    """``schema`` with one more CEL validation."""
    rules = [*schema.get("x-kubernetes-validations", []), {"rule": cel, "message": message}]
    return {**schema, "x-kubernetes-validations": rules}


def _with(schema: Schema, description: str, extra: Mapping[str, Any]) -> Schema:
    if description:
        schema["description"] = description
    schema.update(extra)
    return schema


CONDITIONS = array(
    obj(
        {
            "type": string("Condition type, e.g. Ready.", maxLength=316),
            "status": string(enum=["True", "False", "Unknown"]),
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": date_time(),
            "reason": string(maxLength=1024),
            "message": string(maxLength=32768),
        },
        required=["type", "status", "lastTransitionTime"],
    ),
    "Conditions of the object; Ready summarizes them.",
    **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
)
