"""The check against git before a commit costs what the commit takes, not history
(``integrity.unread_changes`` with ``named``): only the files the commit takes are
compared with ``HEAD``, each one's committed part hashed against its blob id; a file
the commit does not take is left alone (git keeps its committed bytes), and a commit
that ends up taking every file (``git add -A``) checks every file first."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from outerloop.ledger import events as ev
from outerloop.ledger import gitrepo, integrity, pending
from outerloop.ledger.book import LedgerWriter, LogicalClock, is_ledger_key, run_file, tick_file

TARGET = "owner/name"
RUN = "owner__name/runs/tour-1-agent-01.jsonl"


def _git(home: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=home / "ledger", capture_output=True,
                          check=True).stdout


def _note(path: Path, text: str, clock: int = 0) -> None:
    LedgerWriter(path, LogicalClock(clock)).append(ev.Note(level="info", text=text))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A committed ledger: a tick file and a run's file of three lines."""
    gitrepo.init_repo(tmp_path)
    _note(tick_file(tmp_path, TARGET), "first")
    for n in range(3):
        _note(run_file(tmp_path, TARGET, "tour-1-agent-01"), f"run line {n}", clock=n + 1)
    assert gitrepo.commit(tmp_path, 4, stale_lock_s=60).sha
    return tmp_path


def _edit(home: Path) -> bytes:
    """A committed line of the run's file edited in place (same length); returns the
    committed bytes."""
    path = home / "ledger" / RUN
    good = path.read_bytes()
    path.write_bytes(good.replace(b"run line 1", b"run line 9"))
    return good


def _check(home: Path, named: set[str] | None) -> list[integrity.Damage]:
    return integrity.unread_changes(home, home / "ledger", set(), is_ledger_key,
                                    named=named)


def test_a_named_file_edited_since_its_commit_is_restored(home: Path) -> None:
    good = _edit(home)
    (damage,) = _check(home, {RUN, "owner__name/tick.jsonl"})
    assert damage.file == RUN and damage.restored and "line 2 changed" in damage.what
    assert (home / "ledger" / RUN).read_bytes() == good


def test_a_named_file_with_chained_lines_appended_passes(home: Path) -> None:
    _note(run_file(home, TARGET, "tour-1-agent-01"), "a run job's late line", clock=9)
    assert _check(home, {RUN}) == []


def test_a_named_file_whose_appended_lines_do_not_chain_is_restored(home: Path) -> None:
    path = home / "ledger" / RUN
    good = path.read_bytes()
    path.write_bytes(good + good.splitlines(keepends=True)[0])  # its first line again
    (damage,) = _check(home, {RUN})
    assert damage.restored and "do not chain" in damage.what
    assert path.read_bytes() == good


def test_a_named_file_cut_short_or_gone_is_restored(home: Path) -> None:
    path = home / "ledger" / RUN
    good = path.read_bytes()
    path.write_bytes(good[:10])
    (damage,) = _check(home, {RUN})
    assert "shrank" in damage.what and path.read_bytes() == good
    path.unlink()
    (damage,) = _check(home, {RUN})
    assert "gone" in damage.what and path.read_bytes() == good


def test_a_file_not_named_is_not_looked_at_nor_committed(home: Path) -> None:
    committed = _edit(home)
    assert _check(home, {"owner__name/tick.jsonl"}) == []
    _note(tick_file(home, TARGET), "second", clock=10)
    pending.note(home / "ledger", ["owner__name/tick.jsonl"])
    assert gitrepo.commit(home, 1, stale_lock_s=60).sha
    assert _git(home, "show", f"HEAD:{RUN}") == committed  # git keeps the good bytes


def test_every_committed_file_is_checked_when_none_is_named(home: Path) -> None:
    good = _edit(home)
    (damage,) = _check(home, None)
    assert damage.file == RUN and damage.restored
    assert (home / "ledger" / RUN).read_bytes() == good


def test_a_commit_falling_back_to_git_add_all_checks_every_file_first(home: Path) -> None:
    """The named commit cannot be made (an ``index.lock`` left by a killed git): the
    ``git add -A`` that commits instead would take the edited file, so the commit runs
    the check of every file before it, and keeps out what it could not restore."""
    committed = _edit(home)
    _note(tick_file(home, TARGET), "second", clock=10)
    pending.note(home / "ledger", ["owner__name/tick.jsonl"])
    (home / "ledger" / ".git" / "index.lock").write_text("")
    asked: list[str] = []

    def everything() -> list[str]:
        asked.append("checked")
        return [d.file for d in _check(home, None) if not d.restored]

    done = gitrepo.commit(home, 1, stale_lock_s=0, check_everything=everything)
    assert done.sha and asked == ["checked"]
    assert _git(home, "show", f"HEAD:{RUN}") == committed
    assert (home / "ledger" / RUN).read_bytes() == committed
    assert b"second" in _git(home, "show", "HEAD:owner__name/tick.jsonl")


def test_a_long_committed_part_is_hashed_in_chunks(home: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A file longer than one read (segment 1 of an old ledger: gigabytes) is compared
    with its blob id as it is read: chained lines appended pass, an edit does not."""
    monkeypatch.setattr(integrity, "HASH_CHUNK", 7)
    _note(run_file(home, TARGET, "tour-1-agent-01"), "a run job's late line", clock=9)
    assert _check(home, {RUN}) == []
    good = _edit(home)
    (damage,) = _check(home, {RUN})
    assert damage.restored and (home / "ledger" / RUN).read_bytes().startswith(good)
