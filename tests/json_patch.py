"""JSON patches (RFC 6902 ``test`` and ``add``) applied to an object as the API server's json-patch
applies them, for the in-memory API servers of the unit tests: a missing member passes a ``test`` against
null, and a failed ``test`` or an ``add`` under a missing member is refused with 422."""

from __future__ import annotations

import copy
from typing import Any

from kapstan.kube.client import Object
from kapstan.kube.errors import ApiError

UNPROCESSABLE = 422


def apply(obj: Object, ops: list[dict[str, Any]]) -> Object:
    """``obj`` with ``ops`` applied (a new object; ``obj`` is left as it was)."""
    changed = copy.deepcopy(obj)
    for op in ops:
        *parents, key = [part.replace("~1", "/").replace("~0", "~") for part in op["path"].split("/")[1:]]
        holder: Any = changed
        for part in parents:
            holder = holder.get(part) if isinstance(holder, dict) else None
        if not isinstance(holder, dict):
            raise ApiError(f"PATCH {op['path']}: doc is missing path", status=UNPROCESSABLE)
        if op["op"] == "test" and holder.get(key) != op["value"]:
            raise ApiError(f"PATCH {op['path']}: testing value failed", status=UNPROCESSABLE)
        if op["op"] == "add":
            holder[key] = copy.deepcopy(op["value"])
        elif op["op"] != "test":
            raise AssertionError(f"the fake applies test and add only, not {op['op']}")
    return changed
