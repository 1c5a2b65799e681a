"""Quantities are exact: every suffix, exponents, YAML numbers, rounding up to a milli-unit."""

import time
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapstan.api.quantity import (
    MAX_MILLI,
    QuantityError,
    format_quantity,
    parse_quantity,
    to_bounded_milli,
    to_milli,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("1k", Fraction(1000)),
        ("4M", Fraction(4 * 10**6)),
        ("4G", Fraction(4 * 10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("256Mi", Fraction(256 * 2**20)),
        ("4Gi", Fraction(4 * 2**30)),
        ("1Ti", Fraction(2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("1.5e+2", Fraction(150)),
        ("+3", Fraction(3)),
        ("-2Ki", Fraction(-2048)),
    ],
)
def test_parse_quantity_is_exact(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_yaml_numbers_are_quantities() -> None:
    assert parse_quantity(2) == 2
    assert parse_quantity(0.1) == Fraction(1, 10)  # the decimal the YAML said, not the nearest float
    assert to_milli(0.1) == 100


@pytest.mark.parametrize(
    ("text", "milli"), [("1", 1000), ("100m", 100), ("1n", 1), ("1.0001m", 2), ("4G", 4 * 10**12)]
)
def test_to_milli_rounds_up(text: str, milli: int) -> None:
    assert to_milli(text) == milli


@pytest.mark.parametrize("text", ["", "1x", "Gi", "1 Gi", "1e", "1.2.3", "1Kii", "--1", "1e3Gi", " 1"])
def test_bad_quantities_name_the_text(text: str) -> None:
    with pytest.raises(QuantityError, match=repr(text).replace("(", r"\(")):
        parse_quantity(text)


def test_booleans_are_not_quantities() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)


@pytest.mark.parametrize(
    ("resource", "milli", "text"),
    [
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("memory", 4 * 2**30 * 1000, "4Gi"),
        ("memory", 256 * 2**20 * 1000, "256Mi"),
        ("memory", 4 * 10**9 * 1000, "4G"),
        ("memory", 1000 * 1000, "1k"),
        ("memory", 1234567 * 1000, "1234567"),
        ("memory", 1500, "1500m"),
        ("pods", 110_000, "110"),
        ("nvidia.com/gpu", 2000, "2"),
    ],
)
def test_format_quantity(resource: str, milli: int, text: str) -> None:
    assert format_quantity(resource, milli) == text


@given(st.integers(min_value=0, max_value=2**70), st.sampled_from(["cpu", "memory", "pods"]))
def test_format_reads_back(milli: int, resource: str) -> None:
    assert to_milli(format_quantity(resource, milli)) == milli


def test_quantities_are_bounded_like_kubernetes_int64_milli_values() -> None:
    assert to_bounded_milli(f"{2**63 - 1}m") == 2**63 - 1
    assert to_bounded_milli("10000000Gi", clamp=True) == MAX_MILLI
    for too_large in (f"{2**63}m", "1e99999999", 2**64 + 1, "10000000Ei"):
        with pytest.raises(QuantityError, match="too large"):
            to_bounded_milli(too_large)
    with pytest.raises(QuantityError, match="negative"):
        to_bounded_milli("-1")
    assert to_bounded_milli("1e-99999999") == 1  # rounds up, like MilliValue


def test_a_quantity_is_never_expanded_before_it_is_refused() -> None:
    started = time.monotonic()
    for text in ("1e99999999", "9" * 5000, "1" + "0" * 10_000 + "e-9999"):
        with pytest.raises(QuantityError):
            to_bounded_milli(text)
    assert time.monotonic() - started < 1
