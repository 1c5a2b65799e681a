"""Status conditions as Kubernetes writes them (``metav1.Condition``), timestamps, and the status write.

``lastTransitionTime`` changes only when the status flips, so a controller that sets the same condition
on every reconcile neither bumps the time nor, when nothing else changed, writes at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kapstan.kube.client import Object
from kapstan.kube.jsonpatch import Op, as_read, set_members

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
STATUS = ("status",)


def now_text(now: datetime | None = None) -> str:
    """``now`` (the wall clock when not given) as the API writes times: RFC 3339 at whole seconds."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def age_seconds(text: str | None, now: datetime | None = None) -> float:
    """Seconds from the RFC 3339 time ``text`` to ``now`` (the wall clock when not given); 0 when absent."""
    when = parse_time(text)
    return ((now or datetime.now(UTC)) - when).total_seconds() if when else 0.0


def conditions_of(obj: Object) -> list[dict[str, Any]]:
    return list(obj.get("status", {}).get("conditions") or [])


def find(obj: Object, kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions_of(obj) if c.get("type") == kind), None)


def is_true(obj: Object, kind: str) -> bool:
    found = find(obj, kind)
    return found is not None and found.get("status") == TRUE


def with_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: str,
    reason: str,
    message: str = "",
    generation: int = 0,
    *,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """``conditions`` with ``kind`` set; its transition time (``now``, else the wall clock) kept unless
    the status changes."""
    old = next((c for c in conditions if c.get("type") == kind), None)
    changed = old is None or old.get("status") != status
    condition = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now_text(now) if changed or old is None else old["lastTransitionTime"],
    }
    return [c for c in conditions if c.get("type") != kind] + [condition]


def status_patch(obj: Object, fields: Mapping[str, object]) -> list[Op]:
    """A JSON patch (for the ``status`` subresource) setting the status members ``fields`` of ``obj`` as
    read; with ``conditions`` among them, it holds only while the condition list is still the one read.

    Conditions are one list that several controllers write a condition each of (the lifecycle, the
    status controllers, disruption), so a condition written since the read refuses the write instead of
    being dropped, and the caller reads again. Nothing else is tested: every other status member has one
    writer, and the writes since the read that do not touch the conditions (the lifecycle's
    ``capacity``, the status controller's ``resources``, disruption's ``lastPodEventTime``, any label)
    do not refuse it, as they did when the write was conditional on the resourceVersion. An object read
    without a status gets one, tested absent: a status written since refuses it too.
    """
    tested = as_read(obj, STATUS, "conditions") if "conditions" in fields else {}
    return set_members(obj, STATUS, fields, tested=tested)
