"""Offerings whose launches fail are backed off, so the planner takes the next-cheapest one meanwhile.

An offering is one flavor in one zone with one capacity type, the unit a launch buys
(docs/architecture.md#offering-backoff). When a launch of it fails (its Machine failed, never launched or
never registered in time, its MD was full), it is unavailable for a window that starts at one minute and
doubles with each failure in a row up to thirty minutes; a launch that registers a Node resets it. A hold
that lifts by itself (CAPI's MachineSet preflight checks, an MD at its max size) keeps it off for one
minute at a time.
Unavailable is what the snapshot already says of offerings nobody sells (``Offering.available``), so both
engines plan the pods onto the next-cheapest compatible offering without knowing why. When the window is
over, one launch may try the offering again; until that launch registers or fails, the offering stays
unavailable, so a failing offering gets at most one launch per window instead of a storm. The backoff
lives in memory and is recorded in the NodePool's status (``offering_records.py``), so a new leader goes
on with it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta

from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.scheduling.model import InstanceType, Snapshot

OfferingKey = tuple[str, str, str]
"""(instance type, zone, capacity type), as the catalog keys its flavor sources."""

INITIAL = 60.0
MAXIMUM = 1800.0


@dataclass(frozen=True)
class BackoffRecord:
    """A backed-off offering as it is kept across leaders (``offering_records.py``)."""

    failures: int
    until: datetime
    """When its window ends, on the wall clock."""
    reason: str


@dataclass
class _Failing:
    failures: int
    until: float
    reason: str
    probing: bool = False
    """A launch is trying the offering again after its window: no other starts until it ends."""


class OfferingBackoff:
    def __init__(
        self,
        clock: Clock = SYSTEM_CLOCK,
        initial: float = INITIAL,
        maximum: float = MAXIMUM,
    ) -> None:
        self._clock = clock
        self._initial = initial
        self._maximum = maximum
        self._failing: dict[OfferingKey, _Failing] = {}

    def failed(self, offering: OfferingKey, reason: str, *, hold: bool = False) -> float:
        """Record a failed launch of ``offering``; returns the seconds it is now unavailable for.

        ``hold``: the launch is held by a state that lifts by itself, at a time nobody can tell (CAPI's
        MachineSet preflight checks during a control-plane upgrade, an MD at its max size until one of its
        Machines goes): the offering is off for the first window only and the failures in a row do not
        grow, so it is tried again about a minute after the hold lifts, not up to thirty."""
        before = self._failing.get(offering)
        if hold:
            failures = before.failures if before else 1
            window = self._initial
        else:
            failures = before.failures + 1 if before else 1
            window = float(min(self._initial * 2 ** (failures - 1), self._maximum))
        self._failing[offering] = _Failing(failures, self._clock.now() + window, reason)
        return window

    def record(self, offering: OfferingKey) -> BackoffRecord | None:
        """What a new leader needs to go on backing ``offering`` off, with its window's end on the wall
        clock (the monotonic clock means nothing to another process); None when it is not failing."""
        failing = self._failing.get(offering)
        if failing is None:
            return None
        until = self._clock.wall() + timedelta(seconds=failing.until - self._clock.now())
        return BackoffRecord(failing.failures, until.replace(microsecond=0), failing.reason)

    def restore(self, offering: OfferingKey, record: BackoffRecord) -> None:
        """Take over a backoff a previous leader recorded, unless this one knows of more failures."""
        known = self._failing.get(offering)
        if known is not None and known.failures >= record.failures:
            return
        left = (record.until - self._clock.wall()).total_seconds()
        self._failing[offering] = _Failing(record.failures, self._clock.now() + left, record.reason)

    def succeeded(self, offering: OfferingKey) -> bool:
        """A launch of ``offering`` registered its Node: it is available again. True if it was backed off."""
        return self._failing.pop(offering, None) is not None

    def launching(self, offering: OfferingKey) -> None:
        """A launch of ``offering`` has its Machine: if the offering failed before, this one is its probe."""
        if offering in self._failing:
            self._failing[offering].probing = True

    def blocked(self, offering: OfferingKey) -> str:
        """Why no launch of ``offering`` may start now (empty when one may)."""
        failing = self._failing.get(offering)
        if failing is None:
            return ""
        left = failing.until - self._clock.now()
        if left > 0:
            return f"{'/'.join(offering)} backed off for {left:.0f}s more after {failing.failures} failed launch(es): {failing.reason}"
        if failing.probing:
            return (
                f"{'/'.join(offering)} is being tried again by one launch after {failing.failures} failure(s)"
            )
        return ""

    def unavailable(self) -> dict[OfferingKey, str]:
        """Every offering no new launch may use now, and why."""
        return {key: why for key in sorted(self._failing) if (why := self.blocked(key))}

    def restrict(self, snapshot: Snapshot) -> Snapshot:
        """``snapshot`` with the backed-off offerings unavailable (the same object when none is)."""
        blocked = self.unavailable()
        if not blocked:
            return snapshot
        return dataclasses.replace(
            snapshot,
            instance_types=tuple(_restricted(it, blocked) for it in snapshot.instance_types),
        )


def _restricted(flavor: InstanceType, blocked: dict[OfferingKey, str]) -> InstanceType:
    offerings = tuple(
        dataclasses.replace(o, available=False)
        if o.available and (flavor.name, o.zone, o.capacity_type) in blocked
        else o
        for o in flavor.offerings
    )
    return flavor if offerings == flavor.offerings else dataclasses.replace(flavor, offerings=offerings)
