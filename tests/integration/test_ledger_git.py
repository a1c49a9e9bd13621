"""The ledger's git repository: a stale ``index.lock`` heals, the backlog is committed,
a refused push is pushed by a later tick, quiet or not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.kernel.tick import run_tick
from outerloop.ledger.gitrepo import has_backlog
from tests.support import make_home, open_issue


def _lock(settings: Settings, age_s: float) -> Path:
    lock = settings.home / "ledger" / ".git" / "index.lock"
    lock.write_text("")
    then = time.time() - age_s
    os.utime(lock, (then, then))
    return lock


def _uncommitted(settings: Settings) -> str:
    """What the tick left uncommitted, but a run's own file (``<target>/runs/``): its
    attempt job appends there at any time, and the next tick commits what it folded
    (a job forked from a warm interpreter writes its first line before a test's second
    tick has returned)."""
    return subprocess.run(["git", "status", "--porcelain", "--", ".", ":(exclude)*/runs/*"],
                          cwd=settings.home / "ledger", capture_output=True, text=True,
                          check=True).stdout


def test_stale_index_lock_is_broken_with_gits_message_in_notes_when_old_and_unheld(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    lock = _lock(settings, age_s=settings.cadence.tick_timeout_s + 60)
    report = run_tick(settings)
    assert report.events and report.commit is not None
    assert not lock.exists() and _uncommitted(settings) == ""
    (note,) = [n for n in report.notes if "index.lock" in n]
    assert note.startswith("broke a stale ledger/.git/index.lock")
    assert "File exists" in note  # git's own words are kept


def test_backlog_is_committed_by_the_next_tick_when_a_young_lock_blocked_the_commit(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    # An issue naming no benchmark: one explanation, then nothing more ever happens.
    open_issue(settings, "Faster please", "Make it all faster.")
    lock = _lock(settings, age_s=5)
    report = run_tick(settings)
    assert report.events and report.commit is None and lock.exists()
    assert any("git add failed" in n and "File exists" in n for n in report.notes)
    assert _uncommitted(settings) != "" and has_backlog(settings.home)
    assert run_tick(settings).commit is None  # folds the first tick's events, still locked
    lock.unlink()
    quiet = run_tick(settings)  # nothing new of its own to fold or write
    assert quiet.events == 0 and _uncommitted(settings) == ""
    assert not has_backlog(settings.home)


def test_index_lock_is_kept_when_a_process_still_holds_it(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    lock = _lock(settings, age_s=settings.cadence.tick_timeout_s + 60)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                               "f = open(sys.argv[1], 'a'); print('ok', flush=True)\n"
                               "time.sleep(60)", str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        report = run_tick(settings)
        assert lock.exists() and report.commit is None
        assert any(f"pid {holder.pid} still uses it" in n for n in report.notes)
    finally:
        holder.kill()
        holder.wait()


def _refusing_remote(tmp_path: Path) -> tuple[Path, Path]:
    """A bare ledger remote whose pre-receive hook refuses every push while ``flag``
    exists (a remote that is full, read-only for a while, or behind a failing proxy)."""
    remote, flag = tmp_path / "ledger-remote.git", tmp_path / "refuse"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nif [ -e {flag} ]; then echo 'refused: remote is read-only "
                    f"for now' >&2; exit 1; fi\n")
    hook.chmod(0o755)
    flag.touch()
    return remote, flag


def _head(repo: Path, ref: str = "HEAD") -> str:
    return subprocess.run(["git", "rev-parse", ref], cwd=repo, capture_output=True,
                          text=True, check=False).stdout.strip()


def test_a_quiet_tick_pushes_the_ledger_when_an_earlier_push_was_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote, flag = _refusing_remote(tmp_path)
    monkeypatch.setenv("OUTERLOOP_LEDGER_REMOTE", str(remote))
    settings = load_settings(make_home(tmp_path).home)
    # An issue naming no benchmark: one explanation, then nothing more ever happens.
    open_issue(settings, "Faster please", "Make it all faster.")
    first = run_tick(settings)
    assert first.commit is not None
    assert any("ledger push" in n and "read-only for now" in n for n in first.notes)
    assert _head(remote, "refs/heads/main") != first.commit

    flag.unlink()
    quiet = run_tick(settings)
    assert quiet.events == 0 and quiet.commit is None
    assert not [n for n in quiet.notes if "ledger push" in n]
    assert _head(remote, "refs/heads/main") == _head(settings.home / "ledger") == first.commit

    remote.rename(tmp_path / "moved-away.git")  # a push now would fail and say so
    later = run_tick(settings)
    assert later.events == 0 and not [n for n in later.notes if "ledger push" in n]


def test_a_ticks_commit_holds_its_own_lines_and_leaves_nothing_uncommitted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit takes only the files named for it (``ledger/pending.py``): the tick's
    own segments (new ones too: segments small here, so each tick rolls), the heads it
    attested, the files its fold read; nothing may be left."""
    from outerloop.ledger import segments

    monkeypatch.setattr(segments, "SEGMENT_BYTES", 2000)
    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    first = run_tick(settings)
    open_issue(settings, "Faster please", "Make it all faster.")
    report = run_tick(settings)
    assert first.commit and report.events and report.commit not in (None, first.commit)
    assert _uncommitted(settings) == "" and not has_backlog(settings.home)
    ledger = settings.home / "ledger"
    assert len(list(ledger.glob("*/tick.*.jsonl"))) >= 2  # rolled: new segments made
    for path in ledger.glob("*/*.jsonl"):
        shown = subprocess.run(["git", "show", f"HEAD:{path.relative_to(ledger)}"],
                               cwd=ledger, capture_output=True, check=True).stdout
        assert shown == path.read_bytes(), path
