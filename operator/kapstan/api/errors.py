"""One error type for everything wrong in a manifest, worded the same way everywhere.

A user who applies a bad NodePool or forgets a capacity annotation needs three things: which object,
which field, and what is wrong. `ManifestError` carries exactly those, so the CLI and the controllers
can print or record it without knowing where it came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError


class ManifestError(Exception):
    """A problem with one object of a manifest, e.g.
    `MachineDeployment default/x: spec.replicas: must be an integer (in md.yaml, document 2)`."""

    def __init__(self, obj: str, field: str, message: str, location: str = "") -> None:
        super().__init__(obj, field, message, location)
        self.obj = obj
        """The object, as `Kind namespace/name` (or `Kind name` when cluster-scoped)."""
        self.field = field
        """The field path, as `spec.template.spec.requirements[0].operator`."""
        self.message = message
        self.location = location
        """Where the object was read from, e.g. `nodepool.yaml, document 2`; empty when not from a file."""

    def __str__(self) -> str:
        text = ": ".join(part for part in (self.obj, self.field, self.message) if part)
        return f"{text} (in {self.location})" if self.location else text

    def within(self, obj: str = "", prefix: str = "", location: str = "") -> ManifestError:
        """The same error seen from an enclosing object or field: fills in what is still unknown."""
        field = join_path(prefix, self.field) if prefix else self.field
        return ManifestError(self.obj or obj, field, self.message, self.location or location)


def join_path(prefix: str, field: str) -> str:
    """`spec` + `replicas` -> `spec.replicas`; `spec.containers` + `[0].name` -> `spec.containers[0].name`."""
    if not prefix or not field:
        return prefix or field
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a Kubernetes field path; map keys with dots or slashes go in brackets."""
    path = ""
    for part in loc:
        if isinstance(part, int) or "." in part or "/" in part:
            path += f"[{part}]"
        else:
            path = join_path(path, part)
    return path


def from_validation_error(obj: str, error: ValidationError, location: str = "") -> ManifestError:
    """The first problem pydantic found, worded as a ManifestError (and how many more there are)."""
    details = error.errors()
    first = details[0]
    cause = first.get("ctx", {}).get("error")
    message = str(cause) if isinstance(cause, Exception) else first["msg"]
    if first["type"] == "missing":
        message = "required field is missing"
    if len(details) > 1:
        message += f" (and {len(details) - 1} more problem{'s' if len(details) > 2 else ''})"
    return ManifestError(obj, field_path(first["loc"]), message, location)
