"""UTC time as outerloop writes it: one text format for the ledger and the local forge.

Stamps are UTC with microseconds and a ``Z`` (``2026-11-30T04:31:12.123456Z``), so they
sort as text in the same order as in time; the fold and the lanes compare them as
strings. Everything that writes or reads a stamp goes through here, so there is one
format to change.
"""

from __future__ import annotations

from datetime import UTC, datetime

STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
DAY_S = 24 * 3600
"""Seconds in a day: the unit of the settings counted in days (``stale_days``, ...)."""


def now() -> datetime:
    """The current moment, timezone-aware UTC."""
    return datetime.now(UTC)


def stamp(moment: datetime) -> str:
    """``moment`` as a stamp; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(STAMP_FORMAT)


def now_stamp() -> str:
    """The current moment as a stamp (an event's ``at``)."""
    return stamp(now())


def parse_stamp(text: str) -> datetime:
    """A stamp back to an aware UTC datetime; ``ValueError`` on any other text."""
    return datetime.strptime(text, STAMP_FORMAT).replace(tzinfo=UTC)
