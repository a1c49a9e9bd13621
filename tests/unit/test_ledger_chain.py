"""The ledger's hash chain and head attestations (``ledger/chain.py``, ``attest.py``,
``verify.py``): writers chain every line, the fold refuses a file whose new lines do not
chain, and ``verify`` names the file and line of every edit, deletion, move and cut."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from outerloop.ledger import attest, chain, integrity
from outerloop.ledger import events as ev
from outerloop.ledger.book import (
    LedgerDamaged,
    LedgerWriter,
    rebuild,
    run_file,
    run_files,
    tick_file,
    verify_home,
)
from outerloop.ledger.state import Head
from tests.support import unchained

TARGET = "owner/name"
RUN = "tour-1-agent-01"
TICK = "owner__name/tick.jsonl"


def _notes(path: Path, count: int, start: int = 0) -> Path:
    writer = LedgerWriter(path)
    for n in range(start, start + count):
        writer.append(ev.Note(level="info", text=f"note {n}"))
    return path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _attested(home: Path, count: int = 6) -> Path:
    """A home whose tick file holds ``count`` notes, attested as the tick does."""
    path = _notes(tick_file(home, TARGET), count)
    state = rebuild(home)
    assert attest.attest(home, state.heads) == 1
    assert verify_home(home).ok
    return path


def _problems(home: Path) -> list[tuple[str, int, str]]:
    return [(p.file, p.line, p.kind) for p in verify_home(home).problems]


# -- writing -------------------------------------------------------------------------


def test_each_line_names_the_hash_of_the_line_before_it_when_written(tmp_path: Path) -> None:
    lines = _lines(_notes(tmp_path / "f.jsonl", 3))
    assert [chain.prev_of(x) for x in lines] == [
        chain.GENESIS, chain.line_hash(lines[0]), chain.line_hash(lines[1])]
    assert all(json.loads(x)["kind"] == "note" for x in lines)  # still its kind first
    assert lines[0].startswith(b'{"kind":"note"')


def test_a_second_writer_chains_from_the_last_line_another_wrote(tmp_path: Path) -> None:
    path = _notes(tmp_path / "f.jsonl", 2)
    _notes(path, 1, start=2)
    lines = _lines(path)
    assert chain.prev_of(lines[2]) == chain.line_hash(lines[1])


def test_a_torn_line_is_chained_over_by_the_writer_that_terminates_it(tmp_path: Path) -> None:
    path = _notes(tmp_path / "f.jsonl", 2)
    with path.open("ab") as handle:
        handle.write(b'{"kind":"note","v":1,"seq":3,"at":"2026-')  # a crash mid-append
    _notes(path, 1, start=3)
    lines = _lines(path)
    assert chain.prev_of(lines[3]) == chain.line_hash(lines[2])
    assert not chain.walk(path.read_bytes())[1]


def test_an_old_files_chain_starts_at_its_first_chained_line(tmp_path: Path) -> None:
    path = _notes(tmp_path / "f.jsonl", 3)
    path.write_bytes(b"".join(unchained(x) + b"\n" for x in _lines(path)))
    _notes(path, 2, start=3)
    lines = _lines(path)
    assert [chain.prev_of(x) is None for x in lines] == [True, True, True, False, False]
    assert chain.prev_of(lines[3]) == chain.line_hash(lines[2])
    assert not chain.walk(path.read_bytes())[1]


def test_an_old_ledger_folds_and_verifies_with_its_chain_starting_where_it_starts(
        tmp_path: Path) -> None:
    path = _notes(tick_file(tmp_path, TARGET), 3)
    path.write_bytes(b"".join(unchained(x) + b"\n" for x in _lines(path)))  # before
    assert len(rebuild(tmp_path).notes) == 3
    _notes(path, 2, start=3)  # this version's writer continues it
    state = rebuild(tmp_path)
    assert len(state.notes) == 5 and not state.frozen and not state.damaged
    attest.attest(tmp_path, state.heads)
    report = verify_home(tmp_path)
    assert report.ok and (report.lines, report.chained) == (5, 2)
    lines = _lines(path)
    lines[1] = lines[1].replace(b"note 1", b"note X")  # unchained: the chain cannot see it
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    assert verify_home(tmp_path).ok
    lines[2] = lines[2].replace(b"note 2", b"note X")  # the line the chain starts from
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    assert _problems(tmp_path) == [(TICK, 3, "edited")]


def test_the_writer_reads_the_last_line_again_when_another_hand_changed_the_file(
        tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    writer = LedgerWriter(path)
    writer.append(ev.Note(level="info", text="a"))
    _notes(path, 1)  # another writer (a restore, in life) between two appends
    writer.append(ev.Note(level="info", text="b"))
    lines = _lines(path)
    assert chain.prev_of(lines[2]) == chain.line_hash(lines[1])


# -- the chain itself ----------------------------------------------------------------


@pytest.mark.parametrize(("change", "line"), [
    (lambda x: [x[0], x[1].replace(b"note 1", b"note X"), *x[2:]], 3),  # edited
    (lambda x: [x[0], *x[2:]], 2),  # deleted
    (lambda x: [x[0], x[2], x[1], *x[3:]], 2),  # reordered
    (lambda x: [x[0], b"", *x[1:]], 3),  # a blank line inserted
    (lambda x: x[1:], 1),  # the first line deleted
])
def test_the_first_line_that_does_not_chain_is_named_when_lines_change(
        tmp_path: Path, change: object, line: int) -> None:
    lines = _lines(_notes(tmp_path / "f.jsonl", 5))
    changed = change(lines)  # type: ignore[operator]
    _, breaks = chain.walk(b"".join(x + b"\n" for x in changed))
    assert breaks and breaks[0].line == line


def test_a_line_without_prev_after_the_chain_started_is_a_break(tmp_path: Path) -> None:
    lines = _lines(_notes(tmp_path / "f.jsonl", 3))
    lines.insert(2, unchained(lines[1]))
    _, breaks = chain.walk(b"".join(x + b"\n" for x in lines))
    assert breaks[0].line == 3 and "carries no prev" in breaks[0].what


# -- the fold ------------------------------------------------------------------------


def test_the_fold_freezes_a_target_whose_new_lines_do_not_chain_when_git_cannot_restore(
        tmp_path: Path) -> None:
    path = _notes(tick_file(tmp_path, TARGET), 3)
    rebuild(tmp_path)
    _notes(path, 2, start=3)
    lines = _lines(path)
    lines[3] = lines[3].replace(b"note 3", b"note X")  # edited before any fold read it
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    state = rebuild(tmp_path, heal=True)
    assert "owner__name" in state.frozen
    assert "line 5's prev does not match line 4" in state.frozen["owner__name"]
    assert not [n for n in state.notes if n[2] in ("note 3", "note X")]


def test_a_run_job_stops_when_a_line_of_a_file_it_folds_does_not_chain(
        tmp_path: Path) -> None:
    _notes(tick_file(tmp_path, TARGET), 1)
    path = run_file(tmp_path, TARGET, RUN)
    _notes(path, 3)
    lines = _lines(path)
    path.write_bytes(b"".join(x + b"\n" for x in [lines[0], lines[2]]))
    with pytest.raises(LedgerDamaged, match=r"runs/tour-1-agent-01\.jsonl: line 2.s prev"):
        rebuild(tmp_path, files=run_files(tmp_path, TARGET, RUN))


def test_a_small_files_changed_line_is_found_when_its_size_did_not_move(
        tmp_path: Path) -> None:
    """An in-place edit of a line the fold already read (same length, so neither the
    size nor, when far enough back, the tail digest tells): its chain is walked again."""
    path = _notes(tick_file(tmp_path, TARGET), 80)
    assert len(path.read_bytes()) > 2 * integrity.TAIL_BYTES
    rebuild(tmp_path)
    data = path.read_bytes().replace(b'"note 0"', b'"note Z"')
    with path.open("r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(1, 1))
    state = rebuild(tmp_path, heal=True)
    assert "owner__name" in state.frozen
    assert "line 2's prev does not match line 1" in state.frozen["owner__name"]


@pytest.mark.parametrize("chunk", [7, 1000, 1 << 22])
def test_a_files_chain_is_walked_again_a_chunk_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """A changed file the fold walks again (``integrity.chain_problem``) is read a
    chunk at a time, not whole (a full segment 1 of an old ledger is gigabytes): the
    same answer whatever the chunk, lines cut across chunks included."""
    monkeypatch.setattr(integrity, "WALK_CHUNK", chunk)
    path = _notes(tick_file(tmp_path, TARGET), 30)
    data = path.read_bytes()
    end = chain.walk(data)[0].value
    assert integrity.chain_problem(str(path), len(data), end) is None
    assert "changed since it was read" in (
        integrity.chain_problem(str(path), len(data), chain.GENESIS) or "")
    path.write_bytes(data.replace(b'"note 7"', b'"note Z"'))
    assert integrity.chain_problem(str(path), len(data), end) == \
        "line 9's prev does not match line 8 (a line before it was edited, deleted, " \
        "inserted or moved)"
    assert "cannot be read back" in (
        integrity.chain_problem(str(path), len(data) + 1, end) or "")


def test_the_heads_name_where_each_files_chain_stands_after_a_fold(tmp_path: Path) -> None:
    path = _notes(tick_file(tmp_path, TARGET), 3)
    state = rebuild(tmp_path)
    lines = _lines(path)
    assert state.heads[TICK] == Head(len(path.read_bytes()), 3, chain.line_hash(lines[2]),
                                     True, True)
    assert rebuild(tmp_path).heads[TICK].read is False  # not read again: as cached


# -- verify --------------------------------------------------------------------------


def test_verify_passes_an_attested_ledger_and_the_lines_written_since(tmp_path: Path) -> None:
    path = _attested(tmp_path)
    _notes(path, 2, start=6)
    report = verify_home(tmp_path)
    assert report.ok and report.attested == 1 and report.after_heads == 2
    assert report.lines == report.chained == 8


@pytest.mark.parametrize(("change", "problem"), [
    (lambda x: [x[0], x[1], x[2].replace(b"note 2", b"note X"), *x[3:]],
     (TICK, 3, "edited")),
    (lambda x: [*x[:2], *x[3:]], (TICK, 3, "deleted")),
    (lambda x: [*x[:2], x[3], x[2], *x[4:]], (TICK, 3, "reordered")),
    (lambda x: x[:4], (TICK, 5, "truncated")),
    (lambda x: [*x[:5], x[5].replace(b"note 5", b"note X")], (TICK, 6, "head")),
    (lambda x: [*x[:3], unchained(x[1]), *x[3:]], (TICK, 4, "inserted")),
])
def test_verify_names_the_file_line_and_kind_when_a_committed_line_changes(
        tmp_path: Path, change: object, problem: tuple[str, int, str]) -> None:
    path = _attested(tmp_path)
    path.write_bytes(b"".join(x + b"\n" for x in change(_lines(path))))  # type: ignore[operator]
    assert _problems(tmp_path)[0] == problem


def test_verify_says_a_file_is_gone_when_its_head_names_it(tmp_path: Path) -> None:
    _attested(tmp_path).unlink()
    assert _problems(tmp_path) == [(TICK, 0, "gone")]


def test_verify_refuses_an_attestation_edited_or_signed_with_another_key(
        tmp_path: Path) -> None:
    path = _attested(tmp_path)
    heads = path.parent / attest.HEADS_FILE
    line = heads.read_bytes()
    heads.write_bytes(line.replace(b'"tick.jsonl":[6', b'"tick.jsonl":[5'))
    assert ("owner__name/heads.jsonl", 1, "heads") in _problems(tmp_path)
    attest.key_path(tmp_path).write_text("0" * 64 + "\n")
    heads.write_bytes(line)
    assert _problems(tmp_path) == [("owner__name/heads.jsonl", 1, "heads")]


def test_verify_fails_when_the_key_the_heads_need_is_gone(tmp_path: Path) -> None:
    _attested(tmp_path)
    attest.key_path(tmp_path).unlink()
    assert _problems(tmp_path) == [(attest.KEY_FILE, 0, "key")]


def test_the_attestation_key_is_private_to_the_kernel_when_made(tmp_path: Path) -> None:
    attest.ensure_key(tmp_path)
    path = attest.key_path(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert attest.ensure_key(tmp_path) == path.read_text().strip().encode()


def test_a_file_unchanged_since_its_last_attestation_is_not_attested_again(
        tmp_path: Path) -> None:
    path = _attested(tmp_path)
    heads = path.parent / attest.HEADS_FILE
    before = heads.read_bytes()
    assert attest.attest(tmp_path, {TICK: rebuild(tmp_path, use_cache=False).heads[TICK]}) == 0
    assert heads.read_bytes() == before
    _notes(path, 1, start=6)
    assert attest.attest(tmp_path, rebuild(tmp_path).heads) == 1
    assert verify_home(tmp_path).ok and verify_home(tmp_path).after_heads == 0


def test_the_heads_move_on_over_lines_written_after_the_fold(tmp_path: Path) -> None:
    """The tick attests after its own appends: from the fold's head to the file's end."""
    path = _notes(tick_file(tmp_path, TARGET), 2)
    state = rebuild(tmp_path)
    _notes(path, 3, start=2)
    attest.attest(tmp_path, state.heads)
    report = verify_home(tmp_path)
    assert report.ok and report.after_heads == 0 and report.lines == 5
