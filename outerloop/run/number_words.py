"""Numbers in words, as every kernel text shows them: a benchmark's direction, a
recorded decimal, a change relative to the baseline, a PR's title."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext

from outerloop.numfmt import DEFAULT_DIGITS, format_number, format_pair
from outerloop.text import code_span


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


def change_words(baseline: str | None, candidate: str | None, direction: str) -> str:
    """``15.1% lower, better``: the candidate's change relative to |baseline| in words,
    with the sign as a word and whether that is better in the benchmark's direction;
    ``no change`` when equal; empty if unknowable (a baseline of 0, a non-number)."""
    base, cand = decimal_or_none(baseline), decimal_or_none(candidate)
    if base is None or cand is None or base == 0:
        return ""
    if cand == base:
        return "no change"
    with localcontext() as ctx:
        ctx.prec = 60
        percent = abs(cand - base) / abs(base) * 100
        if percent >= Decimal("1e40"):
            return ""
        shown = percent.quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
        text = format(shown, "f") if shown else format_number(percent, 2)
    lower = cand < base
    better = lower if direction == "min" else not lower
    return f"{text}% {'lower' if lower else 'higher'}, {'better' if better else 'worse'}"


def pr_title(agent: str, benchmark: str, baseline: Decimal, candidate: Decimal,
             min_digits: int | None = None) -> str:
    """``[agent-01] tour: 5.123 -> 4.888``: the pair as every surface shows a verdict
    (``numfmt.format_pair``: at least ``min_digits``, the benchmark's ``display_digits``
    when set, more only when needed to tell the two apart).

    A title like ``5.123 -> 5.123`` would hide the improvement it announces.
    """
    shown_base, shown_cand = format_pair(baseline, candidate, min_digits)
    return f"[{agent}] {benchmark}: {shown_base} -> {shown_cand}"
