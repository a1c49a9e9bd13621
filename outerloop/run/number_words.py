"""Numbers in words, as every kernel text shows them: a benchmark's direction, a
recorded decimal, a change relative to the baseline, a PR's title."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext

from outerloop.numfmt import DEFAULT_DIGITS, format_number, format_pair
from outerloop.text import code_span, report_title


def direction_words(direction: str) -> str:
    """``min``/``max`` in words; anything else shown as given (inline, capped)."""
    return {"min": "lower is better", "max": "higher is better"}.get(
        direction, code_span(direction, 20))


def decimal_or_none(value: str | None) -> Decimal | None:
    """A decimal string from the ledger as a finite ``Decimal`` (None: absent or not one)."""
    if value is None:
        return None
    try:
        number = Decimal(value.strip())
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def shown_number(value: str | float | None, digits: int = DEFAULT_DIGITS) -> str | None:
    """A number (a decimal string from the ledger, GPU-hours) as the text shows it
    (``numfmt.format_number``); None stays None, text that is no number is shown as is."""
    return None if value is None else format_number(value, digits)


def change_words(baseline: str | None, candidate: str | None, direction: str,
                 scale: str = "linear") -> str:
    """The candidate's change in words, with the sign as a word and whether that is
    better in the benchmark's direction: ``15.1% lower, better`` (relative to a positive
    baseline); ``no change`` when equal; empty if unknowable (a non-number).

    A percentage is honest only of a positive number: of a negative or zero baseline,
    or when the candidate crosses zero, the change is said as a difference. A ``log10``
    or ``ln`` metric's change is said as the factor on the number it is the log of
    (``10^(candidate - baseline)``): a log error from -1.076 to -6.22 is 139,000 times
    lower, never "478% lower"."""
    base, cand = decimal_or_none(baseline), decimal_or_none(candidate)
    if base is None or cand is None:
        return ""
    if cand == base:
        return "no change"
    lower = cand < base
    better = lower if direction == "min" else not lower
    way = f"{'lower' if lower else 'higher'}, {'better' if better else 'worse'}"
    with localcontext() as ctx:
        ctx.prec = 60
        if scale in LOG_BASES:
            return _factor_words(abs(cand - base), LOG_BASES[scale], way, scale)
        if base <= 0 or cand < 0:
            why = "the baseline is 0" if base == 0 else \
                "a percentage of a value below zero would mislead"
            return f"{format_number(abs(cand - base))} {way}; a difference: {why}"
        percent = abs(cand - base) / abs(base) * 100
        if percent >= Decimal("1e40"):
            return ""
        shown = percent.quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
        text = format(shown, "f") if shown else format_number(percent, 2)
    return f"{text}% {way}"


LOG_BASES = {"log10": Decimal(10), "ln": Decimal(1).exp()}
"""A log metric's base, by the contract's ``scale``."""
MAX_LOG_STEP = Decimal(300)
"""A log metric's change past this many units says no factor (it has no meaning left)."""


def _factor_words(step: Decimal, base: Decimal, way: str, scale: str) -> str:
    """``139,000 times lower, better (the number this log10 metric is the log of)``."""
    if step > MAX_LOG_STEP:
        return f"{format_number(step)} {way} (a {scale} metric)"
    factor = float(base ** step)
    rounded = float(f"{factor:.3g}")
    shown = f"{factor:.3g}".replace("e+", "e") if rounded >= 1e15 else \
        f"{int(rounded):,}" if rounded >= 1000 else format_number(rounded, 3)
    return f"{shown} times {way} (the number this {scale} metric is the log of)"


def pr_title(agent: str, benchmark: str, baseline: Decimal, candidate: Decimal,
             min_digits: int | None = None, report: str = "") -> str:
    """``[agent-01] 2-opt after nearest neighbour (tour: 5.123 -> 4.888)``: the change
    as the report's title line says it, and the pair as every surface shows a verdict
    (``numfmt.format_pair``: at least ``min_digits``, the benchmark's ``display_digits``
    when set, more only when needed to tell the two apart). Without a title line,
    ``[agent-01] tour: 5.123 -> 4.888``.

    A title like ``5.123 -> 5.123`` would hide the improvement it announces.
    """
    shown_base, shown_cand = format_pair(baseline, candidate, min_digits)
    move = f"{benchmark}: {shown_base} -> {shown_cand}"
    change = report_title(report)
    return f"[{agent}] {change} ({move})" if change else f"[{agent}] {move}"
