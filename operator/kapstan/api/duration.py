"""Go durations ("30s", "1h30m", "720h") as Karpenter's API writes them, plus its "Never".

NodePool fields such as `expireAfter` and `consolidateAfter` are Go `time.Duration` strings; reading
them exactly here keeps the controllers from each growing their own parser. Karpenter's CRD narrows
each field further (whole s/m/h units only); `karpenter_duration` and friends apply those patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from fractions import Fraction

from kapstan.api.errors import shown

NEVER = "Never"
MAX_DURATION = timedelta(microseconds=(2**63 - 1) // 1000)
"""Go's `time.Duration` is int64 nanoseconds (about 292 years); a longer duration does not exist."""
_UNIT_MICROSECONDS = {
    "ns": Fraction(1, 1000),
    "us": Fraction(1),
    "µs": Fraction(1),
    "ms": Fraction(1000),
    "s": Fraction(10**6),
    "m": Fraction(60 * 10**6),
    "h": Fraction(3600 * 10**6),
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION = re.compile(rf"[+-]?(?:{_PART.pattern})+")
_MAX_TEXT = 64
# The patterns of Karpenter's CRD (install/crds.yaml): NodePool and NodeClaim durations, and a
# disruption budget's window.
_KARPENTER = re.compile(r"([0-9]+(s|m|h))+")
_BUDGET_WINDOW = re.compile(r"(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?")


def parse_duration(value: object) -> timedelta:
    """A Go duration such as "1h30m" or "300ms" ("0" alone needs no unit), at most Go's maximum."""
    if (
        not isinstance(value, str)
        or len(value) > _MAX_TEXT
        or not (value == "0" or _DURATION.fullmatch(value))
    ):
        raise ValueError(f"invalid duration {shown(value)}: expected a Go duration such as 30s, 15m or 720h")
    micros = sum(Fraction(number) * _UNIT_MICROSECONDS[unit] for number, unit in _PART.findall(value))
    if micros > MAX_DURATION / timedelta(microseconds=1):
        raise ValueError(f"invalid duration {shown(value)}: longer than Go's maximum (about 292 years)")
    return timedelta(microseconds=round(-micros if value.startswith("-") else micros))


def parse_nillable_duration(value: object) -> timedelta | None:
    """A Go duration, or None for Karpenter's "Never"."""
    return _or_never(parse_duration, value)


def _or_never(parse: Callable[[object], timedelta], value: object) -> timedelta | None:
    """`parse(value)`, or None for "Never" (which its error then names as a choice)."""
    if value == NEVER:
        return None
    try:
        return parse(value)
    except ValueError as error:
        raise ValueError(f"{error}, or {NEVER}") from None


def karpenter_duration(value: object) -> timedelta:
    """A NodePool duration as Karpenter's CRD allows it: whole hours, minutes and seconds ("1h30m")."""
    if not isinstance(value, str) or not _KARPENTER.fullmatch(value):
        raise ValueError(
            f"invalid duration {shown(value)}: expected whole h, m and s units such as 30s or 1h30m"
        )
    return parse_duration(value)


def karpenter_nillable_duration(value: object) -> timedelta | None:
    """`karpenter_duration`, or None for "Never"."""
    return _or_never(karpenter_duration, value)


def budget_window(value: object) -> timedelta:
    """A disruption budget's duration: hours and minutes only ("8h", "1h30m"), as Karpenter's CRD says."""
    if not isinstance(value, str) or not _BUDGET_WINDOW.fullmatch(value):
        raise ValueError(
            f"invalid duration {shown(value)}: expected hours and minutes such as 30m, 8h or 1h30m"
        )
    return parse_duration(value)
