"""Segmented ledger series (``ledger/segments.py``): the tick's file rolls to a new
segment when the live one is full, so a commit hashes only the live one; the fold, the
hash chain, ``verify`` and the restore from git treat the series as one ledger whose
segments are named on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from outerloop.ledger import attest, chain, gitrepo, segments
from outerloop.ledger import events as ev
from outerloop.ledger.book import (
    LedgerWriter,
    LogicalClock,
    rebuild,
    tick_file,
    tick_files,
    verify_home,
)

TARGET = "owner/name"
DIR = "owner__name"
LIMIT = 840
"""A segment this long is full (a note line is about 140 bytes): a roll every ~6 lines."""


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "SEGMENT_BYTES", LIMIT)


def _notes(home: Path, count: int, start: int = 0, clock: int = 0) -> None:
    writer = LedgerWriter(tick_file(home, TARGET), LogicalClock(clock),
                          now=lambda: "2026-01-01T00:00:00Z")
    for n in range(start, start + count):
        writer.append(ev.Note(level="info", text=f"note {n}"))


def _names(home: Path) -> list[str]:
    return [p.name for p in tick_files(home, TARGET)]


def _problems(home: Path) -> list[tuple[str, int, str]]:
    return [(p.file, p.line, p.kind) for p in verify_home(home).problems]


def test_the_writer_rolls_to_a_new_segment_when_the_live_one_is_full(
        tmp_path: Path, small: None) -> None:
    _notes(tmp_path, 20)
    names = _names(tmp_path)
    assert names[:3] == ["tick.jsonl", "tick.000002.jsonl", "tick.000003.jsonl"]
    paths = tick_files(tmp_path, TARGET)
    for path in paths[:-1]:  # full ones: past the limit by less than one line
        assert LIMIT <= path.stat().st_size < LIMIT + 300
    lines = [json.loads(x) for p in paths for x in p.read_bytes().splitlines()]
    assert [x["text"] for x in lines] == [f"note {n}" for n in range(20)]
    second = paths[1].read_bytes().splitlines()
    assert json.loads(second[0])["seq"] == 1  # seq is per file
    assert chain.prev_of(second[0]) == chain.line_hash(paths[0].read_bytes().splitlines()[-1])
    lcs = [x["lc"] for x in lines]
    assert lcs == sorted(set(lcs))  # the clock runs on across segments


def test_a_fresh_writer_appends_to_the_live_segment_not_the_first(
        tmp_path: Path, small: None) -> None:
    _notes(tmp_path, 8)
    before = _names(tmp_path)
    first = tick_files(tmp_path, TARGET)[0].read_bytes()
    _notes(tmp_path, 1, start=8, clock=100)
    assert tick_files(tmp_path, TARGET)[0].read_bytes() == first
    assert _names(tmp_path)[: len(before)] == before
    assert verify_home(tmp_path).ok


def test_a_fold_over_segments_equals_a_fold_over_one_file(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    one, many = tmp_path / "one", tmp_path / "many"
    _notes(one, 30)
    monkeypatch.setattr(segments, "SEGMENT_BYTES", LIMIT)
    _notes(many, 30)
    assert len(_names(one)) == 1 and len(_names(many)) > 3
    a, b = rebuild(one, save_cache=False), rebuild(many, save_cache=False)
    assert (a.events, a.clock, a.notes, a.damaged, a.malformed) == \
        (b.events, b.clock, b.notes, b.damaged, b.malformed)
    assert b.events == 30 and not b.ledger_damage


def test_verify_passes_a_series_attested_across_a_segment_boundary(
        tmp_path: Path, small: None) -> None:
    _notes(tmp_path, 20)
    attest.attest(tmp_path, rebuild(tmp_path).heads)
    report = verify_home(tmp_path)
    assert report.ok, report.problems
    assert report.files == len(_names(tmp_path)) and report.attested == report.files


def test_verify_names_the_segment_and_line_of_an_edited_line_in_an_old_segment(
        tmp_path: Path, small: None) -> None:
    _notes(tmp_path, 20)
    attest.attest(tmp_path, rebuild(tmp_path).heads)
    old = tick_files(tmp_path, TARGET)[0]
    lines = old.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"note 2", b"note X")
    old.write_bytes(b"".join(lines))
    assert (f"{DIR}/tick.jsonl", 3, "edited") in _problems(tmp_path)


def test_a_segment_cut_short_breaks_the_first_line_of_the_next(
        tmp_path: Path, small: None) -> None:
    _notes(tmp_path, 20)
    attest.attest(tmp_path, rebuild(tmp_path).heads)
    second = tick_files(tmp_path, TARGET)[1]
    lines = second.read_bytes().splitlines(keepends=True)
    second.write_bytes(b"".join(lines[:-1]))  # its last line dropped
    problems = _problems(tmp_path)
    assert (f"{DIR}/tick.000002.jsonl", len(lines), "truncated") in problems
    assert (f"{DIR}/tick.000003.jsonl", 1, "deleted") in problems


def test_an_old_single_file_ledger_becomes_the_first_segment_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _notes(tmp_path, 30)  # one file, longer than a segment: written before segments
    old = tick_file(tmp_path, TARGET).read_bytes()
    assert len(old) > LIMIT
    first = rebuild(tmp_path)
    attest.attest(tmp_path, first.heads)
    monkeypatch.setattr(segments, "SEGMENT_BYTES", LIMIT)
    _notes(tmp_path, 3, start=30, clock=first.clock)
    assert _names(tmp_path) == ["tick.jsonl", "tick.000002.jsonl"]
    assert tick_file(tmp_path, TARGET).read_bytes() == old
    state = rebuild(tmp_path)
    assert state.events == 33 and state.fresh == 3 and not state.ledger_damage
    assert rebuild(tmp_path, use_cache=False, save_cache=False).events == 33
    assert verify_home(tmp_path).ok


def test_the_quiet_ticks_incremental_read_folds_only_new_lines_after_a_roll(
        tmp_path: Path, small: None) -> None:
    _notes(tmp_path, 4)
    first = rebuild(tmp_path)
    assert len(_names(tmp_path)) == 1 and first.events == 4
    _notes(tmp_path, 12, start=4, clock=first.clock)
    assert len(_names(tmp_path)) >= 2  # rolled past the part the first fold read
    second = rebuild(tmp_path)
    assert second.fresh == 12 and second.events == 16 and not second.ledger_damage
    quiet = rebuild(tmp_path)
    assert quiet.fresh == 0 and quiet.events == 16
    cold = rebuild(tmp_path, use_cache=False, save_cache=False)
    assert cold.notes == quiet.notes


def test_a_new_segments_lines_that_do_not_chain_from_the_last_segment_are_refused(
        tmp_path: Path, small: None) -> None:
    _notes(tmp_path, 8)
    rebuild(tmp_path)
    paths = tick_files(tmp_path, TARGET)
    forged = LedgerWriter(paths[-1].with_name("scratch.jsonl"))  # chained from GENESIS
    forged.append(ev.Note(level="info", text="forged"))
    nxt = segments.next_path(paths[-1])
    forged.path.rename(nxt)
    state = rebuild(tmp_path)
    assert any(f"{DIR}/{nxt.name}" in line for line in state.ledger_damage)
    assert all(text != "forged" for _, _, text in state.notes)


def test_a_damaged_old_segment_is_restored_from_git_on_its_own(tmp_path: Path,
                                                               small: None) -> None:
    gitrepo.init_repo(tmp_path)
    _notes(tmp_path, 20)
    state = rebuild(tmp_path)
    assert gitrepo.commit(tmp_path, state.fresh, stale_lock_s=60).sha
    paths = tick_files(tmp_path, TARGET)
    good = paths[1].read_bytes()
    paths[1].write_bytes(good[: len(good) // 2])
    later = paths[-1].read_bytes()
    state = rebuild(tmp_path, heal=True)
    assert paths[1].read_bytes() == good and paths[-1].read_bytes() == later
    assert any(f"{DIR}/tick.000002.jsonl" in line for line in state.ledger_damage)
    assert not state.frozen and state.events == 20


def test_the_heads_roll_to_a_new_segment_and_verify_reads_them_all(
        tmp_path: Path, small: None) -> None:
    for n in range(12):
        _notes(tmp_path, 3, start=3 * n, clock=100 * n)
        attest.attest(tmp_path, rebuild(tmp_path).heads)
    heads = segments.series(tmp_path / "ledger" / DIR, attest.HEADS_FILE)
    assert heads[:2] == ["heads.jsonl", "heads.000002.jsonl"]
    report = verify_home(tmp_path)
    assert report.ok and report.attested == report.files == len(_names(tmp_path))
    old = tmp_path / "ledger" / DIR / heads[0]
    lines = old.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"tick.jsonl":[6,', b'"tick.jsonl":[5,')
    old.write_bytes(b"".join(lines))  # an attestation in the old segment edited
    assert (f"{DIR}/heads.jsonl", 2, "heads") in _problems(tmp_path)


def test_a_run_jobs_fold_reads_every_segment_of_its_targets_tick_file(
        tmp_path: Path, small: None) -> None:
    from outerloop.ledger.book import run_files

    _notes(tmp_path, 20)
    files = run_files(tmp_path, TARGET, "tour-1-agent-01")
    assert [p.name for p in files[:-1]] == _names(tmp_path)
    assert rebuild(tmp_path, files=files).events == 20
