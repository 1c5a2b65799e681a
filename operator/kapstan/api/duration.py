"""Go durations ("30s", "1h30m", "720h") as Karpenter's API writes them, plus its "Never".

NodePool fields such as `expireAfter` and `consolidateAfter` are Go `time.Duration` strings; reading
them exactly here keeps the controllers from each growing their own parser.
"""

from __future__ import annotations

import re
from datetime import timedelta
from fractions import Fraction

NEVER = "Never"
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


def parse_duration(value: object) -> timedelta:
    """A Go duration such as "1h30m" or "300ms" ("0" alone needs no unit)."""
    if not isinstance(value, str) or not (value == "0" or _DURATION.fullmatch(value)):
        raise ValueError(f"invalid duration {value!r}: expected a Go duration such as 30s, 15m or 720h")
    micros = sum(Fraction(number) * _UNIT_MICROSECONDS[unit] for number, unit in _PART.findall(value))
    return timedelta(microseconds=round(-micros if value.startswith("-") else micros))


def parse_nillable_duration(value: object) -> timedelta | None:
    """A Go duration, or None for Karpenter's "Never"."""
    if value == NEVER:
        return None
    try:
        return parse_duration(value)
    except ValueError as error:
        raise ValueError(f"{error}, or {NEVER}") from None
