"""A ledger file is the one the fold read by its content and hash chain, not its inode:
a home restored from a backup or copied with ``cp -a`` raises no LEDGER DAMAGED, and a
file whose earlier line was edited is still refused when it comes back under a new inode
(issue 48 point 2).

Before: every restore and every ``cp -a`` printed "the file was replaced (another
inode)" at the first tick that appended, and froze or rolled back the target."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.kernel.tick import run_tick
from outerloop.ledger import events as ev
from outerloop.ledger import integrity
from outerloop.ledger import rebuild as ledger_state
from outerloop.ledger.book import LedgerWriter, LogicalClock, tick_file
from tests.support import TARGET, make_home, open_issue

ASKS = "Could this be faster?"
"""An issue naming no benchmark: each gets one kernel comment, so each tick appends."""


def _new_inode(path: Path, data: bytes | None = None) -> None:
    """``path`` written again as a new file renamed over it (a restore's, a copy's
    way), its mtime kept."""
    info = path.stat()
    fresh = path.with_name(path.name + ".restoring")
    fresh.write_bytes(path.read_bytes() if data is None else data)
    os.utime(fresh, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(fresh, path)


def _home_with_a_fold_cache(tmp_path: Path) -> Settings:
    """A home whose fold cache marks its tick file (a first tick leaves none)."""
    settings = make_home(tmp_path)
    for n in range(2):
        open_issue(settings, f"Speed {n}", ASKS)
        assert run_tick(settings).ledger_damage == []
    assert (settings.home / "cache" / "history.sqlite3").exists()
    return settings


def test_a_home_copied_with_cp_a_ticks_on_without_a_damage_alarm(tmp_path: Path) -> None:
    settings = _home_with_a_fold_cache(tmp_path)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(settings.home), str(copy)], check=True)
    copied = load_settings(copy)
    before = tick_file(copy, TARGET).stat().st_ino
    assert before != tick_file(settings.home, TARGET).stat().st_ino
    for n in range(2):
        open_issue(copied, f"Copied {n}", ASKS)
        report = run_tick(copied)
        assert report.ledger_damage == [] and not report.failures, report.ledger_damage
    assert not (copy / "ledger-damaged").exists()


def test_a_file_restored_under_a_new_inode_is_taken_as_it_is(tmp_path: Path) -> None:
    settings = _home_with_a_fold_cache(tmp_path)
    path = tick_file(settings.home, TARGET)
    _new_inode(path)
    os.utime(path)  # a restore that does not keep times: its stat moved, its bytes did not
    open_issue(settings, "Speed again", ASKS)
    report = run_tick(settings)
    assert report.ledger_damage == [], report.ledger_damage


def test_an_edited_line_under_a_new_inode_is_still_refused_and_restored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The edit lies before the bytes the tail digest covers and lines were appended
    after it (a long tick file's case, made small here): only the chain walk a new
    inode asks for finds it."""
    monkeypatch.setattr(integrity, "TAIL_BYTES", 64)
    monkeypatch.setattr(ledger_state, "FULL_CHECK_BYTES", 0)
    settings = _home_with_a_fold_cache(tmp_path)
    path = tick_file(settings.home, TARGET)
    good = path.read_bytes()
    lines = good.splitlines()
    assert len(lines) >= 3 and b'"at":"2' in lines[0]
    lines[0] = lines[0].replace(b'"at":"2', b'"at":"3')  # same length
    _new_inode(path, b"".join(x + b"\n" for x in lines))
    LedgerWriter(path, LogicalClock()).append(ev.Note(level="info", text="appended"))
    open_issue(settings, "Speed again", ASKS)
    report = run_tick(settings)
    damage = " ".join(report.ledger_damage)
    assert "LEDGER DAMAGED ledger/demo__tinytsp/tick.jsonl" in damage, damage
    assert "restored from the ledger's git history" in damage, damage
    assert path.read_bytes().startswith(good)
