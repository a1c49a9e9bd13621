"""The JSONL store: one write per line, torn lines survived, seq continues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, read_lines, rebuild, tick_file


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in read_lines(path).lines]


def test_append_writes_envelope_when_file_is_new(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    LedgerWriter(path).append(ev.Note(text="hello"))
    (event,) = _events(path)
    assert event["seq"] == 1 and event["kind"] == "note"
    assert "v" not in event and "level" not in event  # at their defaults: not written
    assert str(event["at"]).endswith("Z")


def test_torn_last_line_is_skipped_when_reading(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    LedgerWriter(path).append(ev.Note(text="kept"))
    with path.open("ab") as handle:
        handle.write(b'{"v":1,"seq":2,"at":"2026-01-01T00:00:00.000000Z","kind":"no')
    result = read_lines(path)
    assert len(result.lines) == 1 and result.torn


def test_next_append_repairs_torn_line_when_writer_starts(tmp_path: Path) -> None:
    path = tick_file(tmp_path, "o/n")
    LedgerWriter(path).append(ev.Note(text="first"))
    with path.open("ab") as handle:
        handle.write(b'{"v":1,"seq":2,"kind":"torn')
    LedgerWriter(path).append(ev.Note(text="after"))
    state = rebuild(tmp_path, use_cache=False)
    assert [n[2] for n in state.notes] == ["first", "after"]
    assert state.malformed == 1
    assert path.read_bytes().endswith(b"\n")
    assert sum(1 for line in path.read_bytes().split(b"\n") if b"torn" in line) == 1


def test_seq_continues_when_a_new_writer_opens_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    LedgerWriter(path).append(ev.Note(text="a"))
    LedgerWriter(path).append(ev.Note(text="b"))
    assert [e["seq"] for e in _events(path)] == [1, 2]


def test_malformed_middle_line_is_skipped_and_counted_when_folding(tmp_path: Path) -> None:
    path = tick_file(tmp_path, "o/n")
    writer = LedgerWriter(path)
    writer.append(ev.Note(text="a"))
    with path.open("ab") as handle:
        handle.write(b"this is not json\n")
    writer.append(ev.Note(text="b"))
    state = rebuild(tmp_path, use_cache=False)
    assert state.malformed == 1
    assert [n[2] for n in state.notes] == ["a", "b"]


def test_unknown_kind_is_kept_and_ignored_when_folding(tmp_path: Path) -> None:
    path = tick_file(tmp_path, "o/n")
    path.parent.mkdir(parents=True)
    path.write_text('{"v":1,"seq":1,"at":"2026-11-29T12:00:00.000000Z","lc":1,'
                    '"kind":"from_the_future","payload":{"x":1}}\n')
    LedgerWriter(path).append(ev.Note(text="still here"))
    state = rebuild(tmp_path, use_cache=False)
    assert state.unknown == 1 and state.events == 2


def test_misspelled_field_fails_where_the_event_is_built_when_appending() -> None:
    with pytest.raises(TypeError, match="txt"):
        ev.Note(txt="hello")  # type: ignore[call-arg]


def test_writer_stamps_the_envelope_when_the_event_is_built_without_it(tmp_path: Path) -> None:
    writer = LedgerWriter(tick_file(tmp_path, "o/n"), now=lambda: "2026-11-30T12:00:00.0Z")
    first = writer.append(ev.Note(text="a"))
    second = writer.append(ev.Note(text="b", seq=99, at="1999"))
    assert (first.seq, first.at, first.lc) == (1, "2026-11-30T12:00:00.0Z", 1)
    assert (second.seq, second.lc) == (2, 2) and second.at == first.at
