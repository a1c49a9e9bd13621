"""The heads file's own chain (``ledger/attest.py``, ``ledger/verify.py``): each
attestation names, inside what its MAC signs, the hash of the attestation before it, so
``outerloop verify`` fails, naming the file and line, when a committed heads line is
edited, deleted, moved, cut short or replayed; and the tick's check before a commit
refuses heads lines appended that do not chain (``integrity.unread_changes``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from outerloop.ledger import attest, gitrepo, integrity
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, is_ledger_key, rebuild, tick_file, verify_home

TARGET = "owner/name"
HEADS = "owner__name/heads.jsonl"
Lines = list[bytes]


def _attested(home: Path, rounds: int = 4) -> Path:
    """A home whose tick file was attested ``rounds`` times (one heads line each), as
    the tick does: a note, a fold, an attestation."""
    writer = LedgerWriter(tick_file(home, TARGET))
    for n in range(rounds):
        writer.append(ev.Note(level="info", text=f"note {n}"))
        assert attest.attest(home, rebuild(home).heads) == 1
    heads = home / "ledger" / HEADS
    assert len(heads.read_bytes().splitlines()) == rounds
    assert verify_home(home).ok, verify_home(home).problems
    return heads


def _cut(line: bytes) -> bytes:
    return line[: len(line) // 2]


ATTACKS: dict[str, tuple[Callable[[Lines], Lines], int]] = {
    "edited": (lambda x: [x[0], x[1].replace(b'"at":"', b'"at":"1'), *x[2:]], 2),
    "first deleted": (lambda x: x[1:], 1),
    "middle deleted": (lambda x: [x[0], *x[2:]], 2),
    "moved": (lambda x: [x[0], x[2], x[1], x[3]], 2),
    "newest two swapped": (lambda x: [*x[:2], x[3], x[2]], 3),
    "cut short": (lambda x: [x[0], _cut(x[1]), *x[2:]], 2),
    "an old one replayed": (lambda x: [*x, x[1]], 5),
}
"""How a committed heads file is changed, and the line ``verify`` must name."""


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_verify_names_the_heads_line_when_a_committed_attestation_is_changed(
        tmp_path: Path, attack: str) -> None:
    heads = _attested(tmp_path)
    change, line = ATTACKS[attack]
    heads.write_bytes(b"".join(x + b"\n" for x in change(heads.read_bytes().splitlines())))
    report = verify_home(tmp_path)
    assert not report.ok
    said = [p.text() for p in report.problems if p.file == HEADS]
    assert said and said[0].startswith(f"ledger/{HEADS}:{line}: heads: "), said


def test_verify_names_the_committed_heads_lines_cut_off_the_end(tmp_path: Path) -> None:
    """The newest attestation deleted (the file's chain still holds: it is a prefix):
    git's ``HEAD`` holds it, so verify names the first line cut off."""
    heads = _attested(tmp_path)
    gitrepo.init_repo(tmp_path)
    assert gitrepo.commit(tmp_path, 1, stale_lock_s=60).sha
    lines = heads.read_bytes().splitlines()
    heads.write_bytes(b"".join(x + b"\n" for x in lines[:-1]))
    said = [p.text() for p in verify_home(tmp_path).problems]
    assert said and said[0].startswith(f"ledger/{HEADS}:4: truncated: "), said
    heads.write_bytes(b"".join(x + b"\n" for x in lines))
    assert verify_home(tmp_path).ok


def test_an_old_attestation_appended_since_the_commit_is_refused_before_the_next(
        tmp_path: Path) -> None:
    """Signed, but not chained from the committed heads: a replayed attestation would
    move a file's head back. The tick's check before its commit restores the file."""
    heads = _attested(tmp_path)
    gitrepo.init_repo(tmp_path)
    assert gitrepo.commit(tmp_path, 1, stale_lock_s=60).sha
    committed = heads.read_bytes()
    heads.write_bytes(committed + committed.splitlines(keepends=True)[1])
    (damage,) = integrity.unread_changes(tmp_path, tmp_path / "ledger", set(), is_ledger_key)
    assert damage.file == HEADS and damage.restored and "do not chain" in damage.what
    assert heads.read_bytes() == committed
