"""The files no fold reads again are looked at a slice per commit (``ledger/sweep.py``):
a file whose stat moved since it was noted is a suspect (the commit checks it against
``HEAD``), the slices go round, a checked file is passed by next round, and a cold fold
notes its final files anew. Through a tick: ``tests/integration/test_ledger_chain.py``
(a settled run's file edited is restored by the next tick that commits)."""

from __future__ import annotations

import os
from pathlib import Path

from outerloop.ledger import sweep


def _files(home: Path, count: int) -> list[tuple[str, int, int, int]]:
    noted = []
    for n in range(count):
        key = f"owner__name/runs/tour-{n}-agent-01.jsonl"
        path = home / "ledger" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b'{"line":%d}\n' % n)
        info = os.lstat(path)
        noted.append((key, info.st_size, info.st_mtime_ns, info.st_ino))
    return noted


def test_a_file_changed_since_it_was_noted_is_a_suspect_until_seen(tmp_path: Path) -> None:
    noted = _files(tmp_path, 3)
    sweep.note(tmp_path, noted)
    assert sweep.suspects(tmp_path) == {}
    key = noted[1][0]
    path = tmp_path / "ledger" / key
    os.utime(path, ns=(1, 1))  # written over in place: only its stat tells
    found = sweep.suspects(tmp_path)
    assert list(found) == [key]
    assert sweep.suspects(tmp_path) == found  # still one, until checked
    sweep.seen(tmp_path, found)
    assert sweep.suspects(tmp_path) == {}
    path.unlink()
    assert list(sweep.suspects(tmp_path)) == [key]  # gone


def test_the_slices_go_round_the_noted_files(tmp_path: Path) -> None:
    noted = _files(tmp_path, 5)
    sweep.note(tmp_path, noted[:3])
    sweep.note(tmp_path, noted[3:])  # appended as more runs are summarised
    for key, *_ in noted:
        os.utime(tmp_path / "ledger" / key, ns=(1, 1))
    seen = [list(sweep.suspects(tmp_path, count=2)) for _ in range(4)]
    keys = [key for key, *_ in noted]
    assert seen == [keys[0:2], keys[2:4], keys[4:5], keys[0:2]]


def test_a_cold_fold_notes_its_final_files_anew(tmp_path: Path) -> None:
    noted = _files(tmp_path, 4)
    sweep.note(tmp_path, noted)
    sweep.suspects(tmp_path, count=3)  # the cursor moved on
    os.utime(tmp_path / "ledger" / noted[0][0], ns=(1, 1))
    sweep.note(tmp_path, noted[2:], anew=True)
    assert sweep.suspects(tmp_path) == {}
    assert (tmp_path / sweep.FILE).read_text().count("\n") == 2
