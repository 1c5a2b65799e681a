"""Disruption budgets: how many of a NodePool's nodes disruption may take at once, and when.

Karpenter's rules, kept exactly so that existing NodePools behave the same: a budget allows ``nodes``
(a count, or a percentage of the pool's nodes rounded up); a budget with a ``schedule`` (cron, UTC)
counts only inside the window of ``duration`` that starts at each hit of the schedule; a budget with
``reasons`` counts only for those reasons. The pool allows the least of the budgets that count, minus
the nodes already being disrupted. No budget counting means no limit, as in Karpenter.

Pure and clock-free: every function takes ``now``, so a test can walk a window with a fake clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from kapstan.api.karpenter import Budget

EMPTY, UNDERUTILIZED, DRIFTED = "Empty", "Underutilized", "Drifted"
UNLIMITED = 1 << 30

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# A window can only be open if the schedule hit within ``duration``; scanning further back is pointless,
# and a month bounds the scan for absurd durations.
_MAX_SCAN = timedelta(days=31)


class CronError(ValueError):
    """The schedule is not a five-field cron expression or a macro such as ``@daily``."""


@dataclass(frozen=True)
class Cron:
    """A parsed cron schedule: the minutes, hours, days of month, months and weekdays it fires on."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool

    @classmethod
    def parse(cls, text: str) -> Cron:
        expression = _MACROS.get(text.strip().lower(), text)
        fields = expression.split()
        if len(fields) != 5:
            raise CronError(f"invalid schedule {text!r}: expected 5 fields (minute hour day month weekday)")
        minute, hour, day, month, weekday = fields
        weekdays = _field(weekday, 0, 7, _DAYS, text)
        return cls(
            minutes=_field(minute, 0, 59, {}, text),
            hours=_field(hour, 0, 23, {}, text),
            days=_field(day, 1, 31, {}, text),
            months=_field(month, 1, 12, _MONTHS, text),
            weekdays=frozenset(d % 7 for d in weekdays),  # 7 is Sunday too
            any_day=day.startswith("*"),
            any_weekday=weekday.startswith("*"),
        )

    def matches(self, when: datetime) -> bool:
        """Whether the schedule fires in ``when``'s minute (``when`` in UTC)."""
        if when.minute not in self.minutes or when.hour not in self.hours or when.month not in self.months:
            return False
        return self._day_matches(when)

    def active(self, now: datetime, duration: timedelta) -> bool:
        """Whether ``now`` lies in a window of ``duration`` opened by a hit of the schedule."""
        minute = now.replace(second=0, microsecond=0)
        earliest = now - min(duration, _MAX_SCAN)
        while minute > earliest:
            if self.matches(minute):
                return True
            if minute.month not in self.months or not self._day_matches(minute):
                # Jump to the last minute of the previous day: nothing today can match.
                minute = minute.replace(hour=0, minute=0) - timedelta(minutes=1)
                continue
            minute -= timedelta(minutes=1)
        return False

    def _day_matches(self, when: datetime) -> bool:
        day_ok = when.day in self.days
        weekday_ok = (when.isoweekday() % 7) in self.weekdays
        # Standard cron: when both day fields are restricted, either one matching is enough.
        if self.any_day or self.any_weekday:
            return day_ok and weekday_ok
        return day_ok or weekday_ok


def _field(text: str, low: int, high: int, names: dict[str, int], whole: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.lower().split(","):
        base, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if base == "*":
                start, end = low, high
            elif "-" in base:
                first, _, last = base.partition("-")
                start, end = _value(first, names), _value(last, names)
            else:
                start = _value(base, names)
                end = high if step_text else start
        except ValueError:
            raise CronError(f"invalid schedule {whole!r}: cannot read {part!r}") from None
        if step < 1 or not low <= start <= end <= high:
            raise CronError(f"invalid schedule {whole!r}: {part!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _value(text: str, names: dict[str, int]) -> int:
    return names[text] if text in names else int(text)


def budget_active(budget: Budget, now: datetime) -> bool:
    """Whether ``budget`` counts at ``now``: always without a schedule, else inside its window. A
    schedule that does not parse counts always: a typo must hold disruption back, not let it loose."""
    if budget.schedule is None or budget.duration is None:
        return True
    try:
        cron = Cron.parse(budget.schedule)
    except CronError:
        return True
    return cron.active(now, budget.duration)


def budget_nodes(budget: Budget, total: int) -> int:
    """The nodes one budget allows out of ``total``: a count, or a percentage rounded up."""
    if budget.nodes.endswith("%"):
        return math.ceil(total * int(budget.nodes[:-1]) / 100)
    return int(budget.nodes)


def allowed(budgets: Sequence[Budget], reason: str, total: int, disrupting: int, now: datetime) -> int:
    """How many more nodes of a pool with ``total`` nodes, ``disrupting`` of them already going, may be
    disrupted for ``reason`` at ``now``."""
    counting = [b for b in budgets if (not b.reasons or reason in b.reasons) and budget_active(b, now)]
    if not counting:
        return UNLIMITED
    return max(0, min(budget_nodes(b, total) for b in counting) - disrupting)


def validate_schedules(budgets: Iterable[Budget]) -> list[str]:
    """The problems with the budgets' schedules, worded for an Event (empty when all parse)."""
    problems = []
    for budget in budgets:
        if budget.schedule is not None:
            try:
                Cron.parse(budget.schedule)
            except CronError as error:
                problems.append(str(error))
    return problems
