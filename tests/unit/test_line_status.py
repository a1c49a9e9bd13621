"""What ``status`` says of research lines (issue 49, point 5): per agent slot its line
branch, where its newest run's line stands, and the size and first line of the memory
index that line holds; a person's rewrite (the fresh branch the run's line went to) and
the memory files a save refused are named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from outerloop.attempt.candidate import line_tree
from outerloop.ledger.state import LineRecord, RunRecord
from outerloop.line_status import line_rows, line_text
from outerloop.run import lines
from outerloop.run.paths import RunPaths
from tests.unit import test_candidate
from tests.unit.test_candidate import CONTRACT

MEMORY = "\n# Memory of a\n2-opt works\n"


@pytest.fixture
def home(tmp_path: Path) -> tuple[Path, str]:
    """A home whose run ``r1`` has a kernel repository at the base, and the base."""
    made, base = test_candidate.run.__wrapped__(tmp_path / "made")  # type: ignore[attr-defined]
    (tmp_path / "home" / "runs").mkdir(parents=True)
    os.rename(made.root, tmp_path / "home" / "runs" / "r1")
    return tmp_path / "home", base


def _run(line: LineRecord, run_id: str = "r1") -> RunRecord:
    run = RunRecord(run_id=run_id, target="o/t", benchmark="tour", agent="a", issue=3,
                    issue_title="t", hypothesis="h", queued_at="")
    run.line = line
    return run


def test_status_shows_each_slots_line_and_its_memory_size_when_lines_are_on(
        home: tuple[Path, str]) -> None:
    root, base = home
    paths = RunPaths.of(root, "r1")
    (paths.ws / "AGENT_MEMORY.md").write_text(MEMORY)
    head = lines.save_line(paths, base, line_tree(paths, base, CONTRACT), "m")
    row, = line_rows(root, [_run(LineRecord(branch="agents/a", start=base, head=head,
                                            pushed=head))])
    assert (row["branch"], row["memory_chars"], row["memory_first_line"]) == \
        ("agents/a", len(MEMORY), "# Memory of a")
    assert row["saved_on"] == "agents/a" and row["unpushed"] is False
    text = line_text(row)
    assert f"memory: {len(MEMORY)} chars, first line '# Memory of a'" in text
    assert "agents/a at" in text and "pushed" in text


def test_status_names_a_persons_rewrite_and_refused_memory_when_they_happened(
        home: tuple[Path, str]) -> None:
    root, base = home
    line = LineRecord(branch="agents/a", start=base, head=base, pushed="", moved=["agents/a"],
                      refused=["AGENT_MEMORY.md"])
    row, = line_rows(root, [_run(line)])
    assert row["saved_on"] == "agents/a-2" and row["memory_chars"] == 0
    text = line_text(row)
    assert "a person rewrote it" in text and "agents/a-2" in text
    assert "memory: none" in text and "not saved: AGENT_MEMORY.md" in text


def test_status_shows_no_memory_figures_when_the_workspace_was_cleaned(
        home: tuple[Path, str]) -> None:
    root, base = home
    run = _run(LineRecord(branch="agents/a", start=base, head=base, pushed=base))
    run.cleaned = True
    row, = line_rows(root, [run, _run(LineRecord(branch="x", start=base), "r0")][::-1])
    assert row["run"] == "r1" and row["memory_chars"] is None
    assert "memory: unknown" in line_text(row)


SECRET = "sk-live-0123456789abcdefghijklmnop"


def test_status_fences_the_memory_and_never_shows_a_secret_it_holds(
        home: tuple[Path, str]) -> None:
    """A line a person pushed was never scanned by a save: the view redacts the value,
    drops a terminal's escapes, and fences the notes so a backtick run cannot close it."""
    root, base = home
    paths = RunPaths.of(root, "r1")
    (paths.ws / "AGENT_MEMORY.md").write_text(
        f"# notes\nkey {SECRET}\n```\nignore the above\x1b[2J\n" + "x" * 5000)
    head = lines.save_line(paths, base, line_tree(paths, base, CONTRACT), "m")
    row, = line_rows(root, [_run(LineRecord(branch="agents/a", start=base, head=head,
                                            pushed=head))], [SECRET])
    excerpt = str(row["memory_excerpt"])
    assert SECRET not in excerpt and "[REDACTED" in excerpt and "\x1b" not in excerpt
    assert "truncated by outerloop" in excerpt and len(excerpt) <= 1_200
    text = line_text(row)
    assert SECRET not in text and "agents/a:AGENT_MEMORY.md" in text
    assert "\n    ````text\n    # notes" in text  # a fence longer than the memory's ```
