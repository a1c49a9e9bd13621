"""What ``explain RUN`` adds after the run's timeline (issue 49, point 5): its agent
slot's research line with the memory the run's latest line commit holds (an excerpt,
known secrets redacted, fenced: ``line_status``), and the target's lessons (the one line
per earlier ended run every brief lists, ``lessons``), this run's own left out.

Read from the folded ledger and the run's kernel repository (``lines.memory_at``: by
git's mode and size first, never a link); a home whose settings do not load shows no
memory text (its secrets are unknown), only where the memory is.
"""

from __future__ import annotations

from pathlib import Path

from outerloop.errors import OuterloopError
from outerloop.lessons import STATUS_LESSONS, lesson_lines
from outerloop.line_status import line_rows, line_text

EXPLAIN_LESSONS = STATUS_LESSONS * 2


def run_slot(home: Path, run_id: str) -> dict[str, object]:
    """``{"line": row | None, "lessons": [...]}`` for ``run_id`` (its line row as
    ``status --json`` has it; None: the run has no line or is not folded)."""
    from outerloop.config import load_settings
    from outerloop.ledger.book import rebuild
    from outerloop.ledger.history import History
    from outerloop.sandbox.secrets import known_secrets

    try:
        settings = load_settings(home)
        secrets: list[str] | None = known_secrets(settings)
    except OuterloopError:
        secrets = None
    state = rebuild(home, save_cache=False)
    run = state.runs.get(run_id)
    if run is None:
        return {"line": None, "lessons": []}
    row = line_rows(home, [run], secrets or [])[0] if run.line is not None else None
    if row is not None and secrets is None:
        row["memory_excerpt"] = row["memory_first_line"] = None
    lessons = lesson_lines(History.of(state.runs, run.target), run_id, EXPLAIN_LESSONS)
    return {"line": row, "lessons": lessons}


def slot_text(run_id: str, slot: dict[str, object]) -> str:
    """The slot's line and the target's lessons, for a terminal (agent words fenced)."""
    from outerloop.text import fence

    out = []
    row = slot["line"]
    if isinstance(row, dict):
        out.append(f"research line of run {run_id}'s slot:\n{line_text(row)}")
    lessons = slot["lessons"]
    assert isinstance(lessons, list)
    if lessons:
        body = "\n".join(f"  {ln}" for ln in fence("\n".join(lessons)).splitlines())
        out.append(f"the target's lessons now, newest first (as a new run's brief lists "
                   f"them; this run left out):\n{body}")
    return "".join(f"\n{part}\n" for part in out)
