"""Budgets and their cron windows, walked with a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kapstan.api.karpenter import Budget
from kapstan.controllers.disruption import budgets as b
from kapstan.kube.clock import FakeClock

MONDAY_0830 = datetime(2026, 11, 30, 8, 30, tzinfo=UTC)


class WallClock:
    """A ``FakeClock`` read as UTC wall time from ``start``."""

    def __init__(self, start: datetime) -> None:
        self.clock = FakeClock(0.0)
        self.start = start

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.clock.now())

    def advance(self, **delta: float) -> None:
        self.clock.advance(timedelta(**delta).total_seconds())


def test_cron_fields_ranges_steps_names_and_macros() -> None:
    weekdays = b.Cron.parse("0 9 * * mon-fri")
    assert weekdays.matches(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))  # a Monday
    assert not weekdays.matches(datetime(2026, 12, 5, 9, 0, tzinfo=UTC))  # a Saturday
    assert not weekdays.matches(datetime(2026, 11, 30, 9, 1, tzinfo=UTC))
    every_15 = b.Cron.parse("*/15 * * * *")
    assert [m for m in range(60) if m in every_15.minutes] == [0, 15, 30, 45]
    assert b.Cron.parse("@daily") == b.Cron.parse("0 0 * * *")
    sunday = b.Cron.parse("0 0 * * 7")
    assert sunday.matches(datetime(2026, 12, 6, 0, 0, tzinfo=UTC))
    # Both day fields restricted: either matching fires (standard cron).
    either = b.Cron.parse("0 0 1 * mon")
    assert either.matches(datetime(2026, 12, 1, 0, 0, tzinfo=UTC))  # the 1st, a Tuesday
    assert either.matches(datetime(2026, 12, 7, 0, 0, tzinfo=UTC))  # a Monday


@pytest.mark.parametrize(
    "text", ["* * * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "a b c d e", "5-1 * * * *"]
)
def test_invalid_schedules_are_refused(text: str) -> None:
    with pytest.raises(b.CronError):
        b.Cron.parse(text)
    # Built without validation: the model itself refuses what Karpenter's CRD pattern does ("* * * *").
    budget = Budget.model_construct(nodes="0", schedule=text, duration=timedelta(hours=1), reasons=[])
    assert b.validate_schedules([budget])


def test_a_scheduled_budget_blocks_only_inside_its_window() -> None:
    wall = WallClock(MONDAY_0830)
    budgets = [Budget(nodes="0", schedule="0 9 * * *", duration="2h"), Budget(nodes="100%")]

    def allowed() -> int:
        return b.allowed(budgets, b.UNDERUTILIZED, total=4, disrupting=0, now=wall.now())

    assert allowed() == 4  # 08:30: before the window
    wall.advance(minutes=29, seconds=59)
    assert allowed() == 4  # 08:59:59
    wall.advance(seconds=1)
    assert allowed() == 0  # 09:00: the window opens
    wall.advance(hours=1, minutes=59, seconds=59)
    assert allowed() == 0  # 10:59:59: still inside
    wall.advance(seconds=1)
    assert allowed() == 4  # 11:00: closed
    wall.advance(hours=22)
    assert allowed() == 0  # 09:00 the next day


def test_a_window_across_midnight_and_months() -> None:
    budget = [Budget(nodes="0", schedule="30 23 31 * *", duration="1h")]
    inside = datetime(2026, 1, 1, 0, 15, tzinfo=UTC)
    after = datetime(2026, 1, 1, 0, 31, tzinfo=UTC)
    assert b.allowed(budget, b.DRIFTED, 10, 0, inside) == 0
    assert b.allowed(budget, b.DRIFTED, 10, 0, after) == b.UNLIMITED


def test_percentages_round_up_counts_are_counts_and_disrupting_nodes_count_against_them() -> None:
    now = MONDAY_0830
    assert b.allowed([Budget()], b.EMPTY, total=2, disrupting=0, now=now) == 1  # 10% of 2 rounds up
    assert b.allowed([Budget()], b.EMPTY, total=25, disrupting=0, now=now) == 3
    assert b.allowed([Budget()], b.EMPTY, total=25, disrupting=2, now=now) == 1
    assert b.allowed([Budget()], b.EMPTY, total=25, disrupting=9, now=now) == 0
    assert b.allowed([Budget(nodes="3")], b.EMPTY, total=100, disrupting=0, now=now) == 3
    assert b.allowed([Budget(nodes="0")], b.EMPTY, total=100, disrupting=0, now=now) == 0
    assert b.allowed([Budget(nodes="0%")], b.EMPTY, total=100, disrupting=0, now=now) == 0
    assert b.allowed([], b.EMPTY, total=100, disrupting=0, now=now) == b.UNLIMITED


def test_a_budget_with_reasons_counts_only_for_them() -> None:
    budgets = [Budget(nodes="0", reasons=["Drifted"]), Budget(nodes="5")]
    assert b.allowed(budgets, b.DRIFTED, 10, 0, MONDAY_0830) == 0
    assert b.allowed(budgets, b.EMPTY, 10, 0, MONDAY_0830) == 5
    assert b.allowed(budgets, b.UNDERUTILIZED, 10, 0, MONDAY_0830) == 5


def test_a_schedule_that_does_not_parse_always_counts() -> None:
    typo = [Budget(nodes="0", schedule="every day at nine am", duration="1h")]  # five words, no cron
    assert b.allowed(typo, b.EMPTY, 10, 0, MONDAY_0830) == 0
