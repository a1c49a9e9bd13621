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


def test_stamps_sort_as_text_when_in_time_order() -> None:
    moments = [MOMENT + timedelta(microseconds=n * 999_999) for n in range(50)]
    assert sorted(stamp(m) for m in moments) == [stamp(m) for m in moments]
