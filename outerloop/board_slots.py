"""The board's per-slot sections (issues 49 and 50, point 5): the leaderboard
(``leaderboard.py``), each target's lessons (``lessons.py``) and each slot's research line
with a pointer to its memory.

The board is a pure function of the ledger, published as-is: it shows where a slot's
memory is (``agents/<id>:AGENT_MEMORY.md`` at the line commit the ledger names), never
the memory's text, which lives in git and is agent-written; ``status`` and ``explain``
show an excerpt with secrets redacted. The lessons are agent words: the HTML template
escapes them, the markdown puts them in code spans.
"""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.config import Settings
from outerloop.leaderboard import LeaderRow as LeaderRow  # the board's row type
from outerloop.leaderboard import leaderboard, settings_seats
from outerloop.ledger.history import History
from outerloop.ledger.state import State
from outerloop.lessons import STATUS_LESSONS, lesson_lines
from outerloop.line_paths import MEMORY_FILE, line_head


@dataclass(frozen=True, slots=True)
class LessonRow:
    target: str
    lines: list[str]
    """The newest ``STATUS_LESSONS``, newest first (agent words: escaped where shown)."""


@dataclass(frozen=True, slots=True)
class SlotLine:
    """A slot's research line as its newest live run left it."""

    target: str
    agent: str
    branch: str
    """Where the line is saved (a fresh branch when a person rewrote it)."""
    head: str
    pushed: bool
    memory: str
    """Where the memory is: ``agents/<id>:AGENT_MEMORY.md``."""
    not_saved: list[str]
    """Memory files the latest save kept back (a secret, a link, too big)."""


def lesson_rows(history: History) -> list[LessonRow]:
    rows = []
    for target in sorted(history.targets):
        lines = lesson_lines(History.of(history.runs, target), count=STATUS_LESSONS)
        if lines:
            rows.append(LessonRow(target, lines))
    return rows


def slot_lines(history: History) -> list[SlotLine]:
    newest = {(r.target, r.agent): r for r in history.live if r.line is not None}
    rows = []
    for (target, agent), run in sorted(newest.items()):
        line = run.line
        assert line is not None
        branch = line_head(line.branch, line.moved)
        rows.append(SlotLine(target, agent, branch, (line.head or line.start)[:12],
                             not line.unpushed, f"{branch}:{MEMORY_FILE}",
                             [*line.refused, *line.withheld]))
    return rows


def leader_rows(settings: Settings, state: State, history: History) -> list[LeaderRow]:
    return leaderboard(state, settings_seats(settings), history)
