"""Damaged ledger lines (unreadable, or deleted) are named by file and line: in the
tick's notes when first met, and by ``outerloop doctor`` for as long as they stay."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from outerloop.kernel.tick import run_tick
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, rebuild, tick_file
from tests.support import TARGET, make_home, unchained

KEY = "demo__tinytsp/tick.jsonl"


def _notes(settings_home: Path, count: int, *, chained: bool = True) -> Path:
    """``count`` notes in the target's tick file; ``chained=False``: as a version before
    the hash chain wrote them (no ``prev``): a hand edit there is folded, and named,
    while in a chained file it breaks the chain (``tests/integration/test_ledger_chain.py``)."""
    path = tick_file(settings_home, TARGET)
    writer = LedgerWriter(path)
    for n in range(count):
        writer.append(ev.Note(level="info", text=f"note {n}"))
    if not chained:
        path.write_bytes(b"".join(unchained(line) + b"\n"
                                  for line in path.read_bytes().splitlines()))
    return path


def _doctor(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home)],
                          capture_output=True, text=True, timeout=120, check=False)


def test_corrupt_line_is_named_by_file_and_line_when_the_tick_meets_it(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    path = _notes(settings.home, 5, chained=False)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"v":1,"seq":3,"at":"2026-11-30T00:00:00.000000Z","kind":"note","te\n'
    path.write_bytes(b"".join(lines))
    report = run_tick(settings)
    assert any(n.startswith(f"ledger/{KEY}:3: unreadable line dropped") for n in report.notes)
    assert not [n for n in run_tick(settings).notes if "ledger/" in n]  # said once
    done = _doctor(settings.home)
    assert done.returncode == 1
    (line,) = [x for x in done.stdout.splitlines() if "ledger lines" in x]
    assert line.startswith("FAIL") and f"ledger/{KEY}:3: unreadable" in line


def test_deleted_line_is_named_by_file_and_line_when_the_fold_starts_cold(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    path = _notes(settings.home, 6, chained=False)
    rebuild(settings.home, save_cache=False)  # cold: a file shorter than a cache's marks
    # is a damaged file instead (tests/integration/test_ledger_integrity.py)
    lines = path.read_bytes().splitlines(keepends=True)
    del lines[3]  # seq 4 is gone; seq 5 is now line 4
    path.write_bytes(b"".join(lines))
    report = run_tick(settings)
    assert f"ledger/{KEY}:4: line seq 4 is missing before this one (deleted?)" in report.notes
    done = _doctor(settings.home)
    assert "missing before this one" in done.stdout


def test_torn_last_line_is_named_once_the_next_writer_terminates_it(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    path = _notes(settings.home, 2)
    with path.open("ab") as handle:
        handle.write(b'{"v":1,"seq":3,"at":"2026-')  # a crash mid-append
    _notes(settings.home, 1)
    state = rebuild(settings.home, save_cache=False)
    assert [(f, n) for f, n, _ in state.damaged] == [(KEY, 3)]
    assert [e for e in state.notes if e[2] == "note 0"]
