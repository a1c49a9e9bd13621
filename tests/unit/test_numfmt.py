"""The one number formatter: significant digits, scientific notation outside
[1e-4, 1e6), exact zero as 0, and the digits a compared pair is shown at."""

from __future__ import annotations

from decimal import Decimal

import pytest

from outerloop.numfmt import (
    DEFAULT_DIGITS,
    format_hours,
    format_number,
    format_pair,
    format_usd,
    verdict_digits,
)

TINY = 8.881784197001252e-16


@pytest.mark.parametrize(("value", "expected"), [
    (TINY, "8.882e-16"),
    (Decimal("8.881784197001252E-16"), "8.882e-16"),
    ("8.881784197001252e-16", "8.882e-16"),
    (-TINY, "-8.882e-16"),
    (0.0005, "0.0005"),
    (0.0001, "0.0001"),
    (0.00009999, "9.999e-5"),
    (0.000099999, "0.0001"),
    (1234567, "1.235e6"),
    (999999.7, "1e6"),
    (123456, "123456"),
    (12345.678, "12346"),
    (Decimal("5.123456"), "5.123"),
    ("90.0", "90"),
    (Decimal("-2.5000"), "-2.5"),
    (0.1 + 0.2, "0.3"),
    (Decimal("2.5E+900"), "2.5e900"),
])
def test_format_number_reads_at_four_significant_digits_when_no_digits_given(
        value: object, expected: str) -> None:
    assert DEFAULT_DIGITS == 4
    assert format_number(value, DEFAULT_DIGITS) == expected  # type: ignore[arg-type]
    assert format_number(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("zero", [0, 0.0, -0.0, Decimal("0E-16"), "0", "-0.000"])
def test_format_number_shows_exact_zero_as_0(zero: object) -> None:
    assert format_number(zero) == "0"  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "digits", "expected"), [
    (Decimal("5.123456"), 6, "5.12346"),
    (Decimal("0.000123456"), 3, "0.000123"),
    (Decimal("1.23456E-30"), 3, "1.23e-30"),
    (Decimal("123456789"), 4, "1.235e8"),
    (TINY, 3, "8.88e-16"),
])
def test_format_number_keeps_the_digits_asked_for(value: Decimal | float, digits: int,
                                                  expected: str) -> None:
    assert format_number(value, digits) == expected


def test_format_number_names_what_is_not_finite_and_keeps_text_as_given() -> None:
    assert [format_number(v) for v in ("nan", float("inf"), Decimal("-Infinity"))] == [
        "nan", "inf", "-inf"]
    assert format_number(" n/a ") == "n/a"


def test_pair_gets_more_digits_only_when_four_would_read_alike() -> None:
    assert format_pair(0.0005, TINY) == ("0.0005", "8.882e-16")
    assert format_pair(Decimal("5.12341"), Decimal("5.12349")) == ("5.1234", "5.1235")
    base, cand = format_pair(Decimal("0.999995"), Decimal("0.999996"))
    assert base != cand
    assert verdict_digits("7.5", "7.5") == DEFAULT_DIGITS
    assert verdict_digits("7.5", None, 6) == 6
    assert verdict_digits("1", "2", 3) == 3


def test_hours_and_costs_read_without_misleading_zeros() -> None:
    assert format_hours(0.013888) == "0.0139" and format_hours(0) == "0"
    assert format_hours(12.5) == "12.5" and format_hours(2e-6) == "2e-6"
    assert format_usd(1.25) == "$1.25" and format_usd(1234.5) == "$1,234.50"
    assert format_usd(0.0042) == "$0.0042" and format_usd(0) == "$0"


def test_remembered_text_is_never_shared_across_types_that_compare_equal() -> None:
    # 1 == 1.0 == True == Decimal(1) and they hash alike: the memo must still tell a
    # bool (not a number: printed as given) from the number it equals.
    from outerloop.numfmt import verdict_digits

    assert format_number(1) == "1" and format_number(True) == "True"
    assert format_number(0) == "0" and format_number(False) == "False"
    assert verdict_digits(1, 2) == 4 and verdict_digits(True, 2) == 4
    assert format_number(Decimal("sNaN")) == "nan"  # unhashable: formatted unremembered


def test_any_finite_decimal_prints_when_its_exponent_is_past_the_context() -> None:
    """Issue 46: ``1e999999999999`` (beyond the decimal context's exponent range)
    raised ``decimal.Overflow`` in ``format_number``, wherever it was shown."""
    assert format_number(Decimal("1e999999999999")) == "1e999999999999"
    assert format_number(Decimal("-1.23456e999999999999")) == "-1.235e999999999999"
    assert format_number(Decimal("1e-999999999999")) == "1e-999999999999"
