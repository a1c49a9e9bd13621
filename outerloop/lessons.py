"""The target's lessons (issue 49, point 5): one line per earlier ended run, newest first
(date, agent, how it ended and the verdict's numbers, its report's title line), as every
brief lists them under "What earlier runs tried" and as ``status``, the board and
``explain`` show them to the maintainer.

The title line is the agent's own words (``RunRecord.takeaway``): untrusted. Here it is
one line with control characters dropped; each view fences or escapes it (the text
views fence the list, the board's HTML escapes it, its markdown puts it in code spans).
Read from the runs' recent window (``History.recent``), never every past run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from outerloop.numfmt import format_pair
from outerloop.text import fence, one_line

if TYPE_CHECKING:
    from outerloop.ledger.history import History
    from outerloop.ledger.state import State

TRIED_RUNS = 200
"""Earlier ended runs the brief lists, newest first (within ``MAX_TRIED_CHARS``)."""
STATUS_LESSONS = 10
"""The newest lessons per target ``status`` and the board show (a brief: ``TRIED_RUNS``)."""


def lesson_lines(history: History, besides: str = "", count: int = TRIED_RUNS) -> list[str]:
    """``2026-12-05 agent-02 merged (tour 7.502 -> 6.533): 2-opt after nearest
    neighbour``: one line per ended run of ``history`` (one target's) but ``besides``,
    newest first, at most ``count``."""
    lines = []
    for r in history.newest_ended(count + 1):
        if r.run_id == besides:
            continue
        told = next((v for v in reversed(r.verdicts)
                     if v.baseline is not None and v.candidate is not None), None)
        moved = ""
        if told is not None:
            base, cand = format_pair(told.baseline, told.candidate, told.display_digits)
            moved = f" ({told.benchmark or r.benchmark} {base} -> {cand})"
        what = r.takeaway or one_line(r.end_reason, 120) or "no report"
        line = f"{(r.ended_at or '')[:10]} {r.agent} {r.ending or 'ended'}{moved}: {what}"
        lines.append("".join(ch if ch.isprintable() else " " for ch in line))
    return lines[:count]


def lesson_rows(state: State, count: int = STATUS_LESSONS) -> list[dict[str, object]]:
    """Per target with an ended run: its newest ``count`` lessons and how many runs of
    it ended in all (``status --json``'s ``lessons``)."""
    from outerloop.ledger.history import History

    rows: list[dict[str, object]] = []
    for target in sorted(History.of(state.runs).targets):
        history = History.of(state.runs, target)
        lines = lesson_lines(history, count=count)
        if lines:
            rows.append({"target": target, "ended": history.ended_total(), "lines": lines})
    return rows


def lesson_text(row: dict[str, object]) -> str:
    """A target's lessons for a terminal: a header, then the lines fenced (the
    agents' words are data)."""
    lines = row["lines"]
    assert isinstance(lines, list)
    body = "\n".join(f"  {ln}" for ln in fence("\n".join(lines)).splitlines())
    return (f"lessons {row['target']} (the newest {len(lines)} of {row['ended']} ended "
            f"runs, as a brief lists them):\n{body}")
