"""The one stamp format: UTC, microseconds, a Z; sortable as text."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from outerloop.clock import now_stamp, parse_stamp, stamp

MOMENT = datetime(2026, 11, 30, 4, 31, 12, 5, tzinfo=UTC)


def test_stamp_is_fixed_width_utc_with_microseconds_when_written() -> None:
    assert stamp(MOMENT) == "2026-11-30T04:31:12.000005Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", now_stamp())


def test_stamp_converts_to_utc_when_the_moment_has_another_offset() -> None:
    assert stamp(MOMENT.astimezone(timezone(timedelta(hours=5)))) == stamp(MOMENT)


def test_stamp_takes_a_naive_moment_as_utc_when_written() -> None:
    assert stamp(MOMENT.replace(tzinfo=None)) == stamp(MOMENT)


def test_parse_stamp_round_trips_when_read_back() -> None:
    assert parse_stamp(stamp(MOMENT)) == MOMENT


def test_parse_stamp_refuses_when_the_text_is_not_a_stamp() -> None:
    with pytest.raises(ValueError):
        parse_stamp("2026-11-30 04:31:12")


@pytest.mark.parametrize("text", ["2026-02-30T04:31:12.123456Z", "2026-11-30T24:00:00.000000Z",
                                  "2026-11-30T04:31:12.123456+00:00", "2026-11-30T04:31:12Z"])
def test_parse_stamp_refuses_when_the_stamp_is_impossible_or_off_format(text: str) -> None:
    with pytest.raises(ValueError):
        parse_stamp(text)


def test_parse_stamp_reads_what_strptime_reads_when_fast_or_not() -> None:
    from outerloop.clock import STAMP_FORMAT

    texts = [stamp(MOMENT + timedelta(seconds=n * 7_777.123457)) for n in range(200)]
    texts += ["2026-1-3T04:31:12.1Z", "2026-12-31T23:59:59.999999Z"]  # strptime's looser forms
    for text in texts:
        assert parse_stamp(text) == datetime.strptime(text, STAMP_FORMAT).replace(tzinfo=UTC)


def test_stamps_sort_as_text_when_in_time_order() -> None:
    moments = [MOMENT + timedelta(microseconds=n * 999_999) for n in range(50)]
    assert sorted(stamp(m) for m in moments) == [stamp(m) for m in moments]


def test_shorter_forms_cut_the_same_utc_fields_when_written() -> None:
    from outerloop.clock import compact, day, shown, stamp_seconds

    east = MOMENT.astimezone(timezone(timedelta(hours=5)))
    assert stamp_seconds(east) == "2026-11-30T04:31:12Z"
    assert stamp_seconds(MOMENT.timestamp()) == "2026-11-30T04:31:12Z"
    assert day(east) == "2026-11-30" and stamp(MOMENT).startswith(day(MOMENT))
    assert shown(east) == "2026-11-30 04:31:12"
    assert compact(east) == "20261130T043112"


def test_the_week_starts_six_days_back_when_counted_from_today() -> None:
    from outerloop.clock import week_first_day

    assert week_first_day(MOMENT) == "2026-11-24"


def test_no_module_writes_a_time_format_when_clock_holds_them() -> None:
    """Every stamp format lives in clock.py. Exceptions: the agent's tool (standard
    library only, it cannot import outerloop) and the local compute's queue rows, which
    write the submit time as squeue's ``%V`` does (Slurm's format, read back by the same
    parser as Slurm's)."""
    from pathlib import Path

    import outerloop

    root = Path(outerloop.__file__).parent
    pattern = re.compile(r"strftime\(|\.isoformat\(|%Y-|%H:%M")
    speaking_slurm = {"compute/local.py"}
    writers = sorted(name for p in root.rglob("*.py")
                     if p.name != "clock.py" and "agent_tool" not in p.parts
                     and (name := str(p.relative_to(root))) not in speaking_slurm
                     and pattern.search(p.read_text(encoding="utf-8")))
    assert writers == []
