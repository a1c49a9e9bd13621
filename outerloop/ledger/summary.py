"""A settled run as a plain tuple (``Summary``): the layout ``ledger/settled.py`` holds.

``summarize`` makes one from a ``RunRecord`` (``KEPT``'s values, kept containers None
while empty, repeated text interned, then the details not at their default) and
``record`` gives the record back: ``record(summarize(run)) == run``. ``AT`` names each
kept field's place, for readers that test a summary without building its record.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
from collections.abc import Callable
from typing import Any

import msgspec

from outerloop.ledger import events as ev
from outerloop.ledger.records import RunRecord

DETAIL = frozenset({
    "job_ids", "launches", "park_jobs", "park_evals", "feedback", "delivered", "outbox",
    "posted", "publish", "seeds", "pending_request", "report", "hypothesis", "base_sha",
    "branch", "session_id", "pr_head", "published_sha", "climb_job", "wake_job", "deadline",
    "park_seal", "pending_error", "ended_order", "salts", "confirmations", "looks", "trees",
    "changes",
    "comments_cursor", "review_comments_cursor", "issue_comments_cursor",
    "issue_thread_settled",
    "infra_wait", "refused", "endpoint_wait", "revision",
    "rebase_to", "rebased",
})
"""The fields ``compaction.compact`` clears when a run settles: a summary stores one of them
only when it is not at its default (an archive job registered after the run settled)."""


def _default(spec: dataclasses.Field[Any]) -> Any:
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory()
    return spec.default


_FIELDS = dataclasses.fields(RunRecord)
KEPT: tuple[str, ...] = tuple(f.name for f in _FIELDS if f.name not in DETAIL)
"""The fields every summary stores, in this order (then a dict of non-default details)."""
_DETAIL_DEFAULTS: dict[str, Any] = {f.name: _default(f) for f in _FIELDS if f.name in DETAIL}
_DETAIL_DEFAULTS["hypothesis"] = ""  # required in a record; what ``compact`` leaves
_EMPTY = frozenset(f.name for f in _FIELDS if f.name in KEPT
                   and f.default_factory is not dataclasses.MISSING)
"""Kept container fields: stored as None while empty (one shared object, not one each)."""
_KEPT_EMPTY = [(index, name) for index, name in enumerate(KEPT) if name in _EMPTY]
_SHARED = frozenset({"target", "benchmark", "agent", "state", "ending", "issue_title",
                     "refusal", "park_reason", "seat"})
"""Kept text repeated across runs: interned, so it is held and pickled once."""
AT = {name: index for index, name in enumerate(KEPT)}
"""Each kept field's place in a summary."""
RUN_ID, TARGET, ISSUE = AT["run_id"], AT["target"], AT["issue"]
QUEUED_AT, ENDED_AT = AT["queued_at"], AT["ended_at"]
ADMITTED, OUTAGE, CLEANED = AT["admitted"], AT["outage"], AT["cleaned"]
PRUNED, ARCHIVE, REPORT_POSTED = AT["pruned"], AT["archive"], AT["report_posted"]
TALLIED = AT["tallied"]
VERDICTS = AT["verdicts"]
"""A summary holds its run's verdicts as one msgpack text (None: none): a struct each
would cost the cache a Python call apiece to pickle and to load (a quiet tick at
100,000 runs loads some 4,000 summaries); a reader of the record decodes them."""
_ENCODE_VERDICTS = msgspec.msgpack.Encoder().encode
_DECODE_VERDICTS = msgspec.msgpack.Decoder(list[ev.Verdict]).decode


Summary = tuple[Any, ...]
"""A settled run: ``KEPT``'s values (kept containers None while empty), then its
non-default details (or None). A plain tuple: it unpickles as fast as Python can build
one, and ``type(entry) is tuple`` tells it from a ``RunRecord``."""


def record(row: Summary) -> RunRecord:
    """The ``RunRecord`` a summary stands for."""
    values = dict(zip(KEPT, row, strict=False))
    for index, name in _KEPT_EMPTY:
        if row[index] is None:
            del values[name]  # its default: a new empty container
    if row[VERDICTS] is not None:
        values["verdicts"] = _verdicts(row[VERDICTS])
    details: dict[str, Any] | None = row[-1]
    values["hypothesis"] = ""
    if details:
        values.update(details)
    return RunRecord(**values)


def _verdicts(blob: bytes) -> list[ev.Verdict]:
    """A summary's verdicts back; one built in code with a value its type does not
    name (never a folded one: those were decoded from the ledger) comes back as held."""
    try:
        return _DECODE_VERDICTS(blob)
    except msgspec.ValidationError:
        return [ev.Verdict(**{k: v for k, v in fields.items() if k != "kind"})
                for fields in msgspec.msgpack.decode(blob)]


_GET_KEPT = operator.attrgetter(*KEPT)
_GET_DETAIL = operator.attrgetter(*_DETAIL_DEFAULTS)
_DETAIL_NAMES = tuple(_DETAIL_DEFAULTS)
_DETAIL_VALUES = tuple(_DETAIL_DEFAULTS.values())
_EMPTY_AT = tuple(index for index, name in enumerate(KEPT) if name in _EMPTY)
_SHARED_AT = tuple(index for index, name in enumerate(KEPT) if name in _SHARED)
_STAMPS_AT = tuple(index for index, name in enumerate(KEPT) if name.endswith("_at"))


def summarize(run: RunRecord) -> Summary:
    """``run`` as a summary: ``record(summarize(run)) == run``."""
    found = _GET_DETAIL(run)
    details = {name: value for name, value, default
               in zip(_DETAIL_NAMES, found, _DETAIL_VALUES, strict=True) if value != default}
    values = list(_GET_KEPT(run))
    for index in _EMPTY_AT:
        if not values[index]:
            values[index] = None
    if values[VERDICTS] is not None:
        values[VERDICTS] = _ENCODE_VERDICTS(values[VERDICTS])
    for index in _SHARED_AT:
        if type(values[index]) is str:
            values[index] = sys.intern(values[index])
    stamps: dict[str, str] = {}
    for index in _STAMPS_AT:
        if type(values[index]) is str:
            values[index] = stamps.setdefault(values[index], values[index])  # held once
    return (*values, details or None)


SELECTIONS = ("outage", "unarchived", "uncleaned", "unpruned", "unreported", "admitted")
"""What ``Runs.select`` can pick among settled runs: ended on an outage (the cooldown);
not archived (archives), and not cleaned or not pruned either (housekeeping); of an issue
with no report posted (follow-up); admitted (the week's budgets, with ``since``)."""
BY_ENDING = frozenset({"unarchived", "uncleaned", "unpruned"})
"""The selections ``Runs.select`` can cut at an ending (``ended_by``): housekeeping acts
on a settled run only some time after it ended."""


IN: dict[str, Callable[[Summary], bool]] = {
    "outage": lambda e: bool(e[OUTAGE]),
    "unarchived": lambda e: e[ARCHIVE] is None,
    "uncleaned": lambda e: e[ARCHIVE] is None and not e[CLEANED],
    "unpruned": lambda e: e[ARCHIVE] is None and not e[PRUNED],
    "unreported": lambda e: e[ISSUE] is not None and not e[REPORT_POSTED],
    "admitted": lambda e: bool(e[ADMITTED]),
}
"""Whether a summary is in each selection (``Runs._indexes`` files it by the same
tests, inline)."""
