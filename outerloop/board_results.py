"""The board's credited results, each with where it stands and the gate's evidence.

Progress counts merged results only (``ledger/standing.py``); the others are shown
apart, never folded into the best: credited but not merged (its pull request open, or
its run ended without merging it, or replaced by a later submission of the run), and
blocked (the review made it a draft, or sent it back to revise), each with why. Every
result shows the gate's evidence as its verdict recorded it: the gain, its interval,
how many pairs (or couples) were measured and the contract's confidence; what a verdict
written before a field existed lacks is said to be missing, never made up.

Pure: built from the charts' points (``board_chart``), so a result is shown exactly as
its chart draws it (the tally's window for settled runs, the live runs' verdicts). A
run's last verdict as its row shows it (``verdict_text``) is here too: a verdict's
words on the board have one home.
"""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.board_chart import Chart, Point
from outerloop.ledger.events import Verdict
from outerloop.numfmt import format_number, format_pair
from outerloop.text import one_line
from outerloop.vocabulary import IN_PROCESS_MARK, ResultStanding

MAX_RESULTS = 60
"""The results table lists this many (by standing, then newest first); the charts and
``status.json``'s points hold the rest of the window."""
ORDER = (ResultStanding.MERGED, ResultStanding.OPEN, ResultStanding.BLOCKED,
         ResultStanding.UNMERGED, ResultStanding.SUPERSEDED)
WORDS = {ResultStanding.MERGED: "merged",
         ResultStanding.OPEN: "credited, awaiting merge",
         ResultStanding.BLOCKED: "blocked (draft)",
         ResultStanding.UNMERGED: "credited, not merged",
         ResultStanding.SUPERSEDED: "credited, replaced"}
"""What each standing reads as on the board (the JSON keeps the standing itself)."""


def standing_words(standing: str) -> str:
    """A standing as the board reads it (``WORDS``); an unknown one as written."""
    return WORDS.get(ResultStanding(standing), standing)


@dataclass(frozen=True, slots=True)
class ResultRow:
    target: str
    benchmark: str
    run: str
    at: str
    standing: ResultStanding
    shown_as: str
    """``WORDS`` of the standing."""
    why: str
    baseline: str
    candidate: str
    """As every surface shows them (``numfmt.format_pair``)."""
    delta: str | None
    low: str | None
    high: str | None
    pairs: int
    couples: bool
    confidence: float
    evidence: str
    """``gain 5 (interval 3.1 to 6.9) · 12 pairs · confidence 95%``: the same facts,
    as people read them."""


def verdict_text(verdict: Verdict) -> str:
    """``improved 0.0005 → 8.882e-16``: the numbers as the verdict's PR shows them."""
    text = str(verdict.verdict)
    if verdict.baseline is not None and verdict.candidate is not None:
        base, cand = format_pair(verdict.baseline, verdict.candidate, verdict.display_digits)
        text += f" {base} → {cand}"
    if verdict.in_process:  # attempt/in_process.py: the candidate's process printed it
        text += f" ({IN_PROCESS_MARK})"
    return one_line(text, 80)


def evidence(point: Point, digits: int | None = None) -> str:
    """The gate's evidence for a point, one line; a field its verdict did not record is
    named as missing."""
    gain = f"gain {format_number(point.delta)}" if point.delta is not None \
        else "gain not recorded"
    if point.low is not None and point.high is not None:
        low, high = format_pair(point.low, point.high, digits)
        interval = f"interval {low} to {high}"
    else:
        interval = "interval not recorded"
    units = f"{point.pairs} couple{'s' if point.pairs != 1 else ''} " \
            f"({2 * point.pairs} pair jobs)" if point.couples \
        else f"{point.pairs} pair{'s' if point.pairs != 1 else ''}"
    confidence = f"confidence {format_number(point.confidence * 100)}%" \
        if point.confidence > 0 else "confidence not recorded"
    return f"{gain} ({interval}) · {units} · {confidence}"


def result_rows(charts: list[Chart]) -> tuple[list[ResultRow], int]:
    """Every credited point of the charts as a row, merged first, then open, blocked,
    not merged and replaced, newest first within each; at most ``MAX_RESULTS``, and how
    many were left out."""
    rows = []
    for chart in charts:
        for point in chart.points:
            if point.standing is None:
                continue
            base, cand = format_pair(point.baseline, point.candidate, chart.display_digits)
            rows.append(ResultRow(
                target=chart.target, benchmark=chart.benchmark, run=point.run, at=point.at,
                standing=point.standing, shown_as=WORDS.get(point.standing, point.standing),
                why=point.why, baseline=base, candidate=cand, delta=point.delta,
                low=point.low, high=point.high, pairs=point.pairs, couples=point.couples,
                confidence=point.confidence,
                evidence=evidence(point, chart.display_digits)))
    rank = {standing: n for n, standing in enumerate(ORDER)}
    rows.sort(key=lambda r: r.at, reverse=True)
    rows.sort(key=lambda r: rank.get(r.standing, len(ORDER)))
    return rows[:MAX_RESULTS], max(0, len(rows) - MAX_RESULTS)
