"""Offering backoffs kept across leaders, in the NodePool's ``OfferingsAvailable`` condition.

The backoff (``offerings.py``) lives in the leader's memory; a new leader would start without it and launch
the failing offering at once, as if it had never failed. So the condition the lifecycle writes on the
NodePool whose launch failed says, one line per backed-off offering, exactly what a new leader needs:

    c3-4/nova/on-demand backed off until 2026-12-01T17:30:00Z after 2 failed launch(es): RegistrationTimeout: ...

(the window's end on the wall clock, since another process's monotonic clock means nothing here). A new
leader restores every pool's lines before its controllers start. The status, not an annotation: kapstan
writes only the status of the user's NodePools (its RBAC has no patch on them), and the status is where
``kubectl describe`` shows why an offering is not used.
"""

from __future__ import annotations

import re

from kapstan.api.wellknown import OFFERINGS_AVAILABLE
from kapstan.controllers import conditions as cond
from kapstan.controllers.offerings import BackoffRecord, OfferingBackoff, OfferingKey
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Object

_LINE = re.compile(
    r"^(?P<offering>[^/\s]+/[^/\s]+/[^/\s]+) backed off until (?P<until>\S+) "
    r"after (?P<failures>\d+) failed launch\(es\): (?P<reason>.*)$"
)


def message(backoff: OfferingBackoff) -> str:
    """The condition's message: one line per offering no launch may use now (empty when none)."""
    lines = []
    for offering in backoff.unavailable():
        record = backoff.record(offering)
        if record is None:
            continue
        reason = " ".join(record.reason.split())  # one line each, whatever the failure's text held
        until = cond.now_text(record.until)
        lines.append(
            f"{'/'.join(offering)} backed off until {until} after {record.failures} failed launch(es): {reason}"
        )
    return "\n".join(lines)


def parse(pool: Object) -> dict[OfferingKey, BackoffRecord]:
    """The backoffs ``pool``'s ``OfferingsAvailable`` condition records; lines that do not parse are skipped."""
    found = cond.find(pool, OFFERINGS_AVAILABLE)
    if found is None or found.get("status") != cond.FALSE:
        return {}
    records: dict[OfferingKey, BackoffRecord] = {}
    for line in str(found.get("message") or "").splitlines():
        match = _LINE.match(line)
        until = cond.parse_time(match["until"]) if match else None
        if match is None or until is None:
            continue
        instance_type, zone, capacity_type = match["offering"].split("/")
        records[(instance_type, zone, capacity_type)] = BackoffRecord(
            int(match["failures"]), until, match["reason"]
        )
    return records


def restore(state: ClusterState) -> int:
    """Take over the backoffs every NodePool records; returns how many offerings are backed off now."""
    for pool in state.node_pools.store.objects():
        for offering, record in parse(pool).items():
            state.backoff.restore(offering, record)
    return len(state.backoff.unavailable())


def pools_recording(state: ClusterState, offering: OfferingKey) -> list[Object]:
    """The NodePools whose condition still records ``offering`` as backed off."""
    return [pool for pool in state.node_pools.store.objects() if offering in parse(pool)]
