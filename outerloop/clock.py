"""UTC time as outerloop writes it: one text format for the ledger and the local forge.

Stamps are UTC with microseconds and a ``Z`` (``2026-11-30T04:31:12.123456Z``), so they
sort as text in the same order as in time; the fold and the lanes compare them as
strings. Everything that writes or reads a stamp goes through here, so there is one
format to change. The shorter forms (to the second, the day, for people) are cut from
the same fields in the same order, so a day compares against a stamp as its prefix.

Times other programs write (Slurm's ``squeue``/``sacct``, GitHub's API) are read in
their own format where they are parsed (``compute/slurm_parse.py``, ``forge/github.py``).

Tests shift the clock of an ``outerloop tick`` process with ``OUTERLOOP_CLOCK_OFFSET_S``
(seconds, may be negative; read by ``config.clock_offset_s``, applied by ``shift``) to
play a tick host whose clock is wrong; it moves ``now`` and all built on it, never
``unshifted_now`` (the local forge's clock: the forge stands for another host). It is a
test hook: nothing an operator sets.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
SECONDS_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""To the second (commit messages, a lock holder, GitHub's ``since``)."""
DAY_FORMAT = "%Y-%m-%d"
"""A UTC day: a stamp's prefix (``state.gpu_hours_since(target, day)``)."""
SHOWN_FORMAT = "%Y-%m-%d %H:%M:%S"
"""For people (the board, ``forge`` listings), always UTC."""
COMPACT_FORMAT = "%Y%m%dT%H%M%S"
"""Inside names (run ids): no separators a path or a branch would mind."""
WEEK_DAYS = 7
WEEK = timedelta(days=WEEK_DAYS)
"""The window ``runs_per_week`` and ``gpu_hours_per_week`` count over."""
DAY_S = 24 * 3600
"""Seconds in a day: the unit of the settings counted in days (``stale_days``, ...)."""


_shift = timedelta()


def shift(seconds: float) -> None:
    """Test hook: from now on this process's ``now`` is ``seconds`` off (a tick host's
    wrong clock); 0 sets it right again."""
    global _shift
    _shift = timedelta(seconds=seconds)


def now() -> datetime:
    """The current moment, timezone-aware UTC (off by ``shift``, in tests only)."""
    return datetime.now(UTC) + _shift


def unshifted_now() -> datetime:
    """The host's real clock, never shifted by the test hook: the local forge's stamps
    (the forge is another host, whose clock a wrong tick clock does not move)."""
    return datetime.now(UTC)


def stamp(moment: datetime) -> str:
    """``moment`` as a stamp; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(STAMP_FORMAT)


def now_stamp() -> str:
    """The current moment as a stamp (an event's ``at``)."""
    return stamp(now())


_CANONICAL_STAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z", re.ASCII)
"""A stamp exactly as ``stamp`` writes it: ``fromisoformat`` reads that one form the
same as ``strptime`` does, at a tenth of the cost (the board parses a stamp per row)."""


def parse_stamp(text: str) -> datetime:
    """A stamp back to an aware UTC datetime; ``ValueError`` on any other text."""
    if _CANONICAL_STAMP.fullmatch(text):
        return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)
    return datetime.strptime(text, STAMP_FORMAT).replace(tzinfo=UTC)


def _utc(moment: datetime | float) -> datetime:
    """An aware UTC datetime from a datetime (naive: already UTC) or epoch seconds."""
    if isinstance(moment, int | float):
        return datetime.fromtimestamp(moment, UTC)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def stamp_seconds(moment: datetime | float) -> str:
    """``2026-11-30T04:31:12Z``: a datetime or epoch seconds, to the second."""
    return _utc(moment).strftime(SECONDS_FORMAT)


def day(moment: datetime) -> str:
    """``2026-11-30``: the UTC day of ``moment``."""
    return _utc(moment).strftime(DAY_FORMAT)


def week_first_day(now: datetime) -> str:
    """The first UTC day of the ``WEEK_DAYS``-day window ending on ``now``'s day."""
    return day(now - timedelta(days=WEEK_DAYS - 1))


def shown(moment: datetime) -> str:
    """``2026-11-30 04:31:12``: ``moment`` in UTC for people."""
    return _utc(moment).strftime(SHOWN_FORMAT)


def compact(moment: datetime) -> str:
    """``20261130T043112``: ``moment`` (taken as UTC) inside a name."""
    return _utc(moment).strftime(COMPACT_FORMAT)
