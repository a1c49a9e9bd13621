"""Attacks through a research line's memory (issue 49, point 6): the memory is the
agent's writing, kept on its line from run to run and shown in the next brief, so the
kernel treats it as hostile data. A memory file that is a symbolic link (to
``/etc/passwd``, or anywhere outside the tree) is never followed: not saved on the line,
not shown in the brief. One of 10 MB is neither saved nor read whole (the brief shows at
most ``MAX_MEMORY_CHARS``; the secret scan does not read it). A memory file holding a
known secret stays on the line as it was. Each is named to the agent in a note; the
rest of the hand-over is saved (nothing else lost).

Before these rules (main at 0930fb0) the symlink was saved on the line as a link and its
target's path shown as the memory, and a 10 MB topic file was pushed on the line (a 10
MB index read whole by the brief before its cap)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from outerloop.attempt import line_save
from outerloop.attempt.candidate import line_tree
from outerloop.ledger import events as ev
from outerloop.ledger.state import LineRecord
from outerloop.run import lines
from outerloop.run.paths import RunPaths
from tests.unit import test_candidate
from tests.unit.test_candidate import CONTRACT

SECRET = "ghp_SECRETVALUE0123456789abcdef"
BIG = 10 * 1024 * 1024


@pytest.fixture
def run(tmp_path: Path) -> tuple[RunPaths, str]:
    """A run directory: the kernel's clone at the base, and the agent's clone."""
    return test_candidate.run.__wrapped__(tmp_path)  # type: ignore[attr-defined, no-any-return]


def _files(paths: RunPaths, commit: str) -> dict[str, str]:
    out = subprocess.run(["git", "--git-dir", str(paths.kernel_git), "ls-tree", "-r",
                          commit], check=True, capture_output=True, text=True).stdout
    return {ln.split("\t")[1]: ln.split()[0] for ln in out.splitlines()}


def _save(paths: RunPaths, head: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """One hand-over through ``save_on_line`` with a run on a line at ``head``."""
    told: list[Any] = []
    record = SimpleNamespace(line=LineRecord(branch="agents/agent-01", start=head,
                                             head=head, pushed=head),
                             agent="agent-01", run_id="r1")
    ctx = SimpleNamespace(run=record, paths=paths, contract=CONTRACT, settings=None,
                          append=told.append, refresh=lambda: None)
    monkeypatch.setattr(line_save, "known_secrets", lambda _settings: [SECRET])
    line_save.save_on_line(ctx, 0)  # type: ignore[arg-type]
    return told


def test_memory_symlink_is_not_saved_on_the_line_when_it_points_outside(
        run: tuple[RunPaths, str], monkeypatch: pytest.MonkeyPatch) -> None:
    paths, base = run
    os.symlink("/etc/passwd", paths.ws / "AGENT_MEMORY.md")
    (paths.ws / "agent_memory").mkdir()
    os.symlink("../../../outside.txt", paths.ws / "agent_memory" / "t.md")
    (paths.ws / "solver" / "tour.py").write_text("x = 2\n")
    told = _save(paths, base, monkeypatch)
    saved = [e for e in told if isinstance(e, ev.LineSaved)]
    assert len(saved) == 1 and saved[0].refused == ["AGENT_MEMORY.md", "agent_memory/t.md"]
    files = _files(paths, saved[0].sha)
    assert "AGENT_MEMORY.md" not in files and "agent_memory/t.md" not in files
    assert "solver/tour.py" in files  # the rest of the hand-over is kept
    note = line_save.withheld_note([], saved[0].refused) or ""
    assert "AGENT_MEMORY.md" in note and "symbolic link" in note


def test_brief_never_follows_or_shows_a_memory_symlink_when_a_line_holds_one(
        run: tuple[RunPaths, str]) -> None:
    paths, base = run
    os.symlink("/etc/passwd", paths.ws / "AGENT_MEMORY.md")  # a line a person pushed
    sha = lines.save_line(paths, base, line_tree(paths, base, CONTRACT), "m")
    memory = lines.memory_at(paths, sha)
    assert memory.text == "" and "passwd" not in memory.unshown
    assert "not a regular file" in memory.unshown


def test_ten_megabyte_memory_is_neither_saved_nor_read_whole(
        run: tuple[RunPaths, str], monkeypatch: pytest.MonkeyPatch) -> None:
    paths, base = run
    (paths.ws / "AGENT_MEMORY.md").write_text("# short index\n")
    (paths.ws / "agent_memory").mkdir()
    (paths.ws / "agent_memory" / "dump.md").write_bytes(b"x" * BIG + SECRET.encode())
    read: list[int] = []
    real = line_save.files_with
    monkeypatch.setattr(line_save, "files_with", lambda p, t, only, s: read.extend(
        [1] if "agent_memory/dump.md" in only else []) or real(p, t, only, s))
    told = _save(paths, base, monkeypatch)
    saved = next(e for e in told if isinstance(e, ev.LineSaved))
    assert saved.refused == ["agent_memory/dump.md"] and read == []
    files = _files(paths, saved.sha)
    assert "agent_memory/dump.md" not in files and "AGENT_MEMORY.md" in files
    assert lines.memory_at(paths, saved.sha).text == "# short index\n"


def test_brief_does_not_read_a_huge_memory_index_when_a_person_pushed_one(
        run: tuple[RunPaths, str], monkeypatch: pytest.MonkeyPatch) -> None:
    paths, base = run
    (paths.ws / "AGENT_MEMORY.md").write_bytes(b"y" * BIG)
    sha = lines.save_line(paths, base, line_tree(paths, base, CONTRACT), "m")
    calls: list[list[str]] = []
    real = lines.g.git

    def spy(args: list[str], **kw: Any) -> bytes:
        calls.append(args)
        return real(args, **kw)
    monkeypatch.setattr(lines.g, "git", spy)
    memory = lines.memory_at(paths, sha)
    assert memory.text == "" and str(BIG) in memory.unshown
    assert not any("cat-file" in c or "show" in c for c in calls)


def test_memory_holding_a_secret_stays_on_the_line_as_it_was(
        run: tuple[RunPaths, str], monkeypatch: pytest.MonkeyPatch) -> None:
    paths, base = run
    (paths.ws / "AGENT_MEMORY.md").write_text(f"token {SECRET}\n")
    (paths.ws / "agent_memory").mkdir()
    (paths.ws / "agent_memory" / "ok.md").write_text("fine\n")
    saved = next(e for e in _save(paths, base, monkeypatch)
                 if isinstance(e, ev.LineSaved))
    assert saved.withheld == ["AGENT_MEMORY.md"] and saved.refused == []
    assert "AGENT_MEMORY.md" not in _files(paths, saved.sha)
    assert "agent_memory/ok.md" in _files(paths, saved.sha)


def test_regular_memory_is_saved_and_shown_when_it_is_small(
        run: tuple[RunPaths, str], monkeypatch: pytest.MonkeyPatch) -> None:
    paths, base = run
    (paths.ws / "AGENT_MEMORY.md").write_text("\n# Index\n2-opt works\n")
    saved = next(e for e in _save(paths, base, monkeypatch)
                 if isinstance(e, ev.LineSaved))
    assert saved.refused == [] and saved.withheld == []
    memory = lines.memory_at(paths, saved.sha)
    assert memory.chars == len("\n# Index\n2-opt works\n") and memory.first_line == "# Index"
    assert lines.memory_at(paths, base).text == ""
