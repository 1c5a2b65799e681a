"""One error type for everything wrong in a manifest, worded the same way everywhere.

A user who applies a bad NodePool or forgets a capacity annotation needs three things: which object,
which field, and what is wrong. `ManifestError` carries exactly those, so the CLI and the controllers
can print or record it without knowing where it came from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import ValidationError

MAX_SHOWN = 80
"""How many characters of a value from a manifest an error quotes; the rest is elided."""
MAX_PART = 400
"""How long one part of an error (object, field, message, location) may grow, so a line stays a line."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape(text: str, limit: int = MAX_PART) -> str:
    """Text from a manifest made safe for one line: control characters (newlines, escape sequences)
    written as escapes, and cut at `limit` characters."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), cut)


def shown(value: object) -> str:
    """A value from a manifest as an error quotes it, never expanded: a container (which YAML aliases
    can make exponentially large) is named by its type, a long string or number is cut."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return escape(repr(value[: MAX_SHOWN + 1]), MAX_SHOWN)
    if isinstance(value, int):
        # str() of an int above 4300 digits raises; its length is what matters to the reader.
        digits = value.bit_length() * 0.30103
        return str(value) if digits < MAX_SHOWN else f"an integer of about {int(digits)} digits"
    if isinstance(value, float):
        return repr(value)
    return f"a {type(value).__name__}"


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
        text = ": ".join(escape(part) for part in (self.obj, self.field, self.message) if part)
        return f"{text} (in {escape(self.location)})" if self.location else text

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
    message = str(cause) if isinstance(cause, Exception) else str(first["msg"])
    if first["type"] == "missing":
        message = "required field is missing"
    if len(details) > 1:
        message += f" (and {len(details) - 1} more problem{'s' if len(details) > 2 else ''})"
    return ManifestError(obj, field_path(first["loc"]), message, location)
