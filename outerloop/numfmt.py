"""Numbers for people: the one formatter of every metric value and gain outerloop shows.

PR titles and bodies, wakes and briefs, issue notes, the board (HTML, ``CLIMB.md``, the
display strings of ``status.json``) and ``outerloop status`` all print a measured value
through ``format_number``, so one value reads the same everywhere:

- ``digits`` significant digits (``DEFAULT_DIGITS``, or the benchmark's
  ``display_digits``), rounded half-even, trailing zeros dropped: ``5.123``, ``2.5``;
- fixed-point from ``1e-4`` up to (not including) ``1e6``, integer digits never
  rounded away (``123456`` stays whole): ``0.0005``, ``90``, ``123456``;
- scientific notation outside that range, mantissa to ``digits`` significant digits,
  the exponent without ``+`` or leading zeros: ``8.882e-16``, ``1.235e6``;
- exact zero is ``0``; not-a-number and infinities are ``nan``, ``inf``, ``-inf``.

Where two numbers are compared (a verdict's baseline and candidate, a PR title),
``verdict_digits`` finds the fewest digits (at least the minimum) at which they print
differently: ``5.123 -> 5.123`` would hide the change it announces. Every surface
shows a verdict's numbers at that one count, so they agree to the character.

Raw values stay raw where machines read them (the ledger, ``status --json``'s numbers,
``leader.json``): this module only makes text.
"""

from __future__ import annotations

from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    ROUND_HALF_EVEN,
    Decimal,
    InvalidOperation,
    localcontext,
)
from functools import lru_cache

DEFAULT_DIGITS = 4
"""Significant digits when the benchmark sets no ``display_digits``."""
MAX_DIGITS = 30
"""``verdict_digits`` never goes beyond this (two values equal to 30 digits)."""
FIXED_MIN_EXPONENT = -4
"""The smallest decimal exponent printed fixed-point (``0.0001``); below: scientific."""
FIXED_MAX_EXPONENT = 5
"""The largest decimal exponent printed fixed-point (``999999``); above: scientific."""
HOURS_DIGITS = 3
"""Significant digits of GPU-hours and costs."""

Number = Decimal | float | int | str


def as_decimal(value: Number | None) -> Decimal | None:
    """``value`` as an exact ``Decimal`` (a float by its shortest repr, so
    ``8.881784197001252e-16`` is not its 50-digit binary expansion); None when absent or
    not a number. Non-finite values are kept (``format_number`` names them)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value
    try:
        return Decimal(repr(value) if isinstance(value, float) else str(value).strip())
    except (InvalidOperation, ValueError):
        return None


MEMO_SIZE = 8192
"""Formatted values kept per process: the board prints each run's numbers, mostly the
same few thousand, at every tick that renders it."""


def format_number(value: Number, digits: int = DEFAULT_DIGITS) -> str:
    """``value`` for people: ``digits`` significant digits, fixed-point from ``1e-4``
    to below ``1e6`` (integer digits kept), scientific outside (``8.882e-16``), exact
    zero as ``0``. A string that is not a number is returned as given (stripped)."""
    try:
        return _format_memo(value, digits)
    except TypeError:  # unhashable (a signalling NaN): the same text, unremembered
        return _format(value, digits)


@lru_cache(maxsize=MEMO_SIZE, typed=True)
def _format_memo(value: Number, digits: int) -> str:
    """``_format``, remembered: its text depends on the value only (equal values of a
    type print alike), so equal keys are safe to share."""
    return _format(value, digits)


def _format(value: Number, digits: int) -> str:
    number = as_decimal(value)
    if number is None:
        return str(value).strip()
    if not number.is_finite():
        return "nan" if number.is_nan() else ("-inf" if number.is_signed() else "inf")
    if number.is_zero():
        return "0"
    digits = max(1, digits)
    with localcontext() as ctx:  # any finite Decimal prints: 1e999999999999 overflowed
        ctx.prec = max(ctx.prec, abs(number.adjusted()) + digits + 2)
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        rounded = number.quantize(Decimal(1).scaleb(number.adjusted() - digits + 1),
                                  rounding=ROUND_HALF_EVEN)
        exponent = rounded.adjusted()
        if FIXED_MIN_EXPONENT <= exponent <= FIXED_MAX_EXPONENT:
            quantum = Decimal(1).scaleb(min(number.adjusted() - digits + 1, 0))
            return _trimmed(format(number.quantize(quantum, rounding=ROUND_HALF_EVEN), "f"))
        mantissa = rounded.scaleb(-exponent)
    return f"{_trimmed(format(mantissa, 'f'))}e{exponent}"


def _trimmed(text: str) -> str:
    """Fixed-point text without trailing zeros after the point (``2.50`` -> ``2.5``)."""
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def verdict_digits(baseline: Number | None, candidate: Number | None,
                   min_digits: int | None = None) -> int:
    """The significant digits to show a compared pair at: the fewest, at least
    ``min_digits`` (``DEFAULT_DIGITS`` when None), at which ``baseline`` and
    ``candidate`` print differently (``min_digits`` when they are equal or unknown)."""
    try:
        return _verdict_digits_memo(baseline, candidate, min_digits)
    except TypeError:  # unhashable (a signalling NaN)
        return _verdict_digits(baseline, candidate, min_digits)


@lru_cache(maxsize=MEMO_SIZE, typed=True)
def _verdict_digits_memo(baseline: Number | None, candidate: Number | None,
                         min_digits: int | None) -> int:
    return _verdict_digits(baseline, candidate, min_digits)


def _verdict_digits(baseline: Number | None, candidate: Number | None,
                    min_digits: int | None) -> int:
    least = max(1, min_digits or DEFAULT_DIGITS)
    base, cand = as_decimal(baseline), as_decimal(candidate)
    if base is None or cand is None or base == cand:
        return least
    for digits in range(least, max(MAX_DIGITS, least) + 1):
        if _format(base, digits) != _format(cand, digits):
            return digits
    return least


def format_pair(baseline: Number | None, candidate: Number | None,
                min_digits: int | None = None) -> tuple[str, str]:
    """``baseline`` and ``candidate`` at ``verdict_digits``: they never read alike
    unless they are equal. An absent value is ``""``."""
    digits = verdict_digits(baseline, candidate, min_digits)
    return ("" if baseline is None else format_number(baseline, digits),
            "" if candidate is None else format_number(candidate, digits))


def format_hours(hours: float) -> str:
    """GPU-hours for people: ``0``, ``0.0139``, ``12.5``, ``1235``."""
    return format_number(hours, HOURS_DIGITS)


def format_usd(cost: float) -> str:
    """A model cost for people: ``$1.25`` (cents from one cent up, thousands grouped),
    ``$0.0042`` below a cent (never a misleading ``$0.00``), ``$0`` for none."""
    if cost <= 0:
        return "$0"
    if cost >= 0.01:
        return f"${cost:,.2f}"
    return f"${format_number(cost, HOURS_DIGITS)}"
