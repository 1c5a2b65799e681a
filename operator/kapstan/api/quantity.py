"""Kubernetes resource quantities, parsed exactly.

The solver counts in integer milli-units, so a quantity must never pass through a float: "0.1" CPU is
100m and "4G" of memory is 4,000,000,000 bytes, not something close to them. This module is the only
place that reads the quantity grammar (`resource.Quantity` in apimachinery).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from kapstan.api.errors import shown

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# The exponent form is tried before the single-letter suffixes so that "1E3" is 1000, while "1E" is exa.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>\d+\.?\d*|\.\d+)"
    r"(?:[eE](?P<exponent>[+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)"
)
MAX_MILLI = 2**63 - 1
"""The largest amount Kubernetes can hold: a quantity's milli-value is an int64 (`MilliValue`)."""
MAX_TEXT = 64
"""No quantity that fits an int64 milli-value needs more characters; longer text is refused before any
arithmetic (a few hundred digits would otherwise cost real time, and 4300 raise)."""
_MAX_EXPONENT = 40
"""Beyond 10^40 no nonzero quantity fits MAX_MILLI; below 10^-40 one rounds up to 1m anyway."""
# Resources counted in bytes, shown with binary or decimal suffixes.
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")


class QuantityError(ValueError):
    """A quantity that does not follow the Kubernetes grammar."""


def parse_quantity(value: str | int | float | Fraction) -> Fraction:
    """The exact value of a quantity given as text or as a YAML number."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}: expected a number or a string like 500m or 4Gi")
    if isinstance(value, int):
        return Fraction(value)
    # repr() of a float is the shortest text that reads back the same, i.e. what the YAML said.
    text = repr(value) if isinstance(value, float) else value
    if len(text) > MAX_TEXT:
        raise QuantityError(f"invalid quantity {shown(text)}: longer than {MAX_TEXT} characters")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(
            f"invalid quantity {shown(text)}: expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (1e3)"
        )
    number = Fraction(match["number"])
    if match["exponent"] is not None:
        # Clamped so that 1e99999999 is not expanded digit by digit: out of range either way.
        exponent = max(-_MAX_EXPONENT, min(_MAX_EXPONENT, int(match["exponent"])))
        number *= Fraction(10) ** exponent
    else:
        suffix = match["suffix"] or ""
        number *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    return -number if match["sign"] == "-" else number


def to_milli(value: str | int | float | Fraction) -> int:
    """The quantity in milli-units, rounded up like Kubernetes' `MilliValue`."""
    return math.ceil(parse_quantity(value) * 1000)


def to_bounded_milli(value: str | int | float | Fraction, *, clamp: bool = False) -> int:
    """The quantity in milli-units, which must lie in 0..MAX_MILLI as the API server requires; with
    `clamp`, a larger one is MAX_MILLI (a NodePool limit written as "10000000Gi" means no limit)."""
    milli = to_milli(value)
    if milli < 0:
        raise QuantityError(f"invalid quantity {shown(value)}: must not be negative")
    if milli > MAX_MILLI:
        if clamp:
            return MAX_MILLI
        raise QuantityError(
            f"invalid quantity {shown(value)}: too large (at most {MAX_MILLI} milli-units, an int64 as in Kubernetes)"
        )
    return milli


def format_quantity(resource_name: str, milli: int) -> str:
    """A milli-unit amount as a person would write it: "1500m" or "2" CPU, "4Gi" or "256Mi" memory."""
    if milli % 1000:
        return f"{milli}m"
    whole = milli // 1000
    if resource_name not in _BYTE_RESOURCES and not resource_name.startswith("hugepages-"):
        return str(whole)
    candidates = [str(whole)]
    for suffix, factor in [*_BINARY.items(), *((s, int(f)) for s, f in _DECIMAL.items() if f > 1)]:
        if whole and whole % factor == 0:
            candidates.append(f"{whole // factor}{suffix}")
    # The shortest exact form reads best; on a tie, binary (listed first) wins.
    return min(candidates, key=len)
