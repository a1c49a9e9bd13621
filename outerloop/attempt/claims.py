"""The report check: the numbers an agent's report states about the metric, against
what the gate measured (pure).

A *claim* is a number with a decimal point or an exponent (``6.53``, ``1e-3``), or a
percentage (``12%``), in a sentence of the report that names the metric (its name as
written, or its words: ``mean_tour_length`` or "mean tour length"), not glued to a
word (``2-opt``, ``v1.2``) and not followed by a unit of time or size (``0.8 s``,
``1.5x``). Bare integers are not claims: in prose they are mostly counts (instances,
pairs, seeds, cities).

A claim **matches** the gate when it lies within the range of one of the gate's
figures, widened by ``TOLERANCE`` (3 %) of the metric's scale (the larger of the
baseline and candidate means) and by half a unit of the claim's last stated digit (it
may be a rounding): each side's values across the submission's pairs, the per-pair
gains, and each point figure (the two means, the gain, the ends of the gain interval,
the noise). A percentage matches the per-pair relative gains (gain / baseline, in
percent) or the means' relative gain, widened by 3 percentage points and its half unit.
Why the pairs' range and 3 %: a number the agent measured itself, under another seed,
spreads as the gate's own seeds do. Measured on tinytsp over 3,000 draws of the gate's
3 seeds (its first look): the example agent's report (its own launch's numbers at the
default seed) was flagged once (0.03 %); a number 10 % above the baseline or below the
candidate, and a gain of 25 % or 5 % (the gate's: ~13 %), every time. A number between
the two sides (10 % above the candidate) reads as one of them and passes.

Signs are ignored (a gain written as a drop). A claim that matches nothing is reported
in one **advisory** finding (``REPORT_SOURCE``): see docs/architecture.md, "The report
check", for why it does not block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, Decimal, InvalidOperation, localcontext

from outerloop.numfmt import format_number, verdict_digits
from outerloop.run.findings import MAX_DETAIL_CHARS, MAX_SUMMARY_CHARS, Finding
from outerloop.text import one_line

REPORT_SOURCE = "report check"
TOLERANCE = Decimal("0.03")
"""The check's tolerance: 3 % of the metric's scale (the larger of the baseline and
candidate means), or 3 percentage points for a percentage."""
MAX_CLAIMS_SHOWN = 10
MAX_QUOTE_CHARS = 240

_NUMBER = re.compile(
    r"(?<![\w.\-/])[-+\u2212]?"
    r"(?P<num>\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+(?:\.\d+)?(?=\s?%))"
    r"(?P<pct>\s?%)?"
    r"(?!\.\d|[\w/])"
    r"(?!\s?(?:s|sec|secs|seconds?|ms|min|mins|minutes?|h|hrs?|hours?|[KMGT]i?B|x|\u00d7)\b)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\"'\[])")
_BLOCK_LINE = re.compile(r"^\s*(?:[-*+]\s|\d+\.\s|\||#|>)")


@dataclass(frozen=True)
class Measured:
    """What the gate measured of the credited submission (decimal strings as the
    ``verdict`` and ``gate_look`` events keep them)."""

    baseline: str | None
    candidate: str | None
    delta: str | None
    low: str | None = None
    high: str | None = None
    sd: str | None = None
    pairs: Sequence[tuple[str, str]] = ()


@dataclass(frozen=True)
class Claim:
    text: str
    value: Decimal
    percent: bool
    sentence: str

    @property
    def half_unit(self) -> Decimal:
        """Half a unit of the last digit stated: what a rounding may hide."""
        exponent = self.value.as_tuple().exponent
        assert isinstance(exponent, int)
        return Decimal(5).scaleb(exponent - 1)


def sentences(report: str) -> list[str]:
    """The report's sentences: paragraphs joined, list items, table rows and headings
    on their own, then split at sentence ends."""
    units: list[str] = []
    current: list[str] = []
    for line in report.splitlines():
        if not line.strip() or _BLOCK_LINE.match(line):
            if current:
                units.append(" ".join(current))
                current = []
            if line.strip():
                units.append(line.strip())
            continue
        current.append(line.strip())
    if current:
        units.append(" ".join(current))
    return [part for unit in units for part in _SENTENCE_END.split(unit) if part.strip()]


def names_metric(sentence: str, metric: str) -> bool:
    """The sentence names the metric: as written, or its words with spaces or hyphens."""
    words = [w for w in re.split(r"[_\-.\s]+", metric.casefold()) if w]
    if not words:
        return False
    spelled = r"[\s_\-]+".join(re.escape(w) for w in words)
    return re.search(rf"(?<![\w]){spelled}(?![\w])", sentence.casefold()) is not None


def claims(report: str, metric: str) -> list[Claim]:
    """Every claim the report makes about ``metric`` (in order, repeats kept once)."""
    found: list[Claim] = []
    seen: set[tuple[str, bool]] = set()
    for sentence in sentences(report):
        if not names_metric(sentence, metric):
            continue
        for match in _NUMBER.finditer(sentence):
            text, percent = match.group("num"), match.group("pct") is not None
            try:
                value = Decimal(text)
            except InvalidOperation:
                continue
            if (text, percent) in seen or not value.is_finite():
                continue
            seen.add((text, percent))
            found.append(Claim(match.group(0).strip(), value.copy_abs(), percent, sentence))
    return found


def _dec(text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value.copy_abs() if value.is_finite() else None


def _percent(gain: Decimal, base: Decimal) -> Decimal | None:
    return None if base == 0 else 100 * gain / base


def _inside(claim: Claim, values: list[Decimal], widen: Decimal) -> bool:
    """The claim lies in the range of ``values`` widened by ``widen`` and its own
    half unit."""
    if not values:
        return False
    margin = widen + claim.half_unit
    return min(values) - margin <= claim.value <= max(values) + margin


def matches(claim: Claim, gate: Measured) -> bool:
    """The claim is a number the gate measured, within the tolerance above. Compared in
    a context whose exponents reach any decimal's: a report's ``1e999999999999``
    overflowed the default one (its half unit alone) and crashed the review at every
    recovery (issue 46); it is a claim the gate did not measure, like any other."""
    with localcontext() as ctx:
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        return _matches(claim, gate)


def _matches(claim: Claim, gate: Measured) -> bool:
    pairs = [(b, c) for b, c in ((_dec(x), _dec(y)) for x, y in gate.pairs)
             if b is not None and c is not None]
    base, cand, delta = _dec(gate.baseline), _dec(gate.candidate), _dec(gate.delta)
    if claim.percent:
        relative = [p for p in (_percent(abs(b - c), b) for b, c in pairs) if p is not None]
        mean = _percent(delta, base) if delta is not None and base is not None else None
        ranges = [relative, [mean] if mean is not None else []]
        widen = TOLERANCE * 100
    else:
        points = [base, cand, delta, _dec(gate.low), _dec(gate.high), _dec(gate.sd)]
        ranges = [[b for b, _ in pairs], [c for _, c in pairs], [abs(b - c) for b, c in pairs],
                  *([p] for p in points if p is not None)]
        widen = TOLERANCE * max(base or 0, cand or 0)
    return any(_inside(claim, values, widen) for values in ranges)


def report_findings(report: str, metric: str, gate: Measured) -> list[Finding]:
    """One advisory finding listing the report's claims about ``metric`` that the
    gate did not measure; none when every claim matches (or there is none)."""
    unmatched = [c for c in claims(report, metric) if not matches(c, gate)]
    if not unmatched:
        return []
    shown = unmatched[:MAX_CLAIMS_SHOWN]
    listed = ", ".join(c.text for c in shown) + (
        f" and {len(unmatched) - len(shown)} more" if len(unmatched) > len(shown) else "")
    summary = (f"The report states {listed} about `{metric}`; the gate measured no such "
               f"value")
    quotes = "\n".join(f"- {c.text}: \"{one_line(c.sentence, MAX_QUOTE_CHARS)}\""
                       for c in shown)
    detail = (f"{_measured_line(gate)}\n\nWhere the report says it:\n{quotes}\n\nA claim "
              f"matches when it lies within the range of a figure the gate measured (a "
              f"side's values over its pairs, the gains, the means), widened by 3% of the "
              f"metric's scale (3 percentage points for a percentage) and half a unit of "
              f"its last digit; these do not. The gate's numbers are the ones this pull "
              f"request stands on.")
    return [Finding(severity="advisory", source=REPORT_SOURCE,
                    summary=one_line(summary, MAX_SUMMARY_CHARS),
                    detail=detail[:MAX_DETAIL_CHARS])]


def _measured_line(gate: Measured) -> str:
    digits = verdict_digits(gate.baseline, gate.candidate)
    parts = [f"{name} {format_number(value, digits)}" for name, value in (
        ("baseline", gate.baseline), ("candidate", gate.candidate), ("gain", gate.delta))
        if value is not None]
    base, delta = _dec(gate.baseline), _dec(gate.delta)
    relative = _percent(delta, base) if base is not None and delta is not None else None
    if relative is not None:
        parts.append(f"relative gain {format_number(relative, 3)}%")
    if gate.pairs:
        shown = "; ".join(f"{format_number(b, digits)} -> {format_number(c, digits)}"
                          for b, c in list(gate.pairs)[:12])
        parts.append(f"pairs (baseline -> candidate): {shown}")
    return "The gate measured: " + ", ".join(parts) + "."
