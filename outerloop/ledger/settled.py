"""Settled runs summarised: ``State.runs`` without a full record per run ever recorded.

A settled run (ended, reported, recorded, none of its jobs live: ``fold.compact``) has
nothing left to say, yet intake counts its claims, the cooldown reads its outage, the
board and ``status`` list it. Kept as a ``RunRecord`` it cost ~2 KB in memory and ~10 µs
to unpickle on every tick, so a quiet tick grew with history. Here it is a ``Summary``: a
plain tuple of the fields ``compact`` keeps (plus any detail that is not at its default,
so nothing is lost), pickled as a tuple and read back without building a record.

``Runs`` is the mapping ``State.runs`` holds: ``run_id -> RunRecord`` in queue order,
where a settled run's entry is its ``Summary``. Reading it by id (``runs[id]``,
``runs.get(id)``) brings the run back as a full ``RunRecord`` (the fold then updates it
as before: an archive, a clean, a late job end; the next ``compact`` summarises it again).
Iterating ``values()``/``items()`` yields full records too, built on the fly and not kept
(the board, ``status``: views over all history). What a tick reads every time goes
through ``live()`` (unsettled runs only), ``select(among)`` (the settled runs a lane may
act on or count: indexes made in one pass over the summaries) and ``of_issue`` (an index),
so a quiet tick never builds a record per settled run.
"""

from __future__ import annotations

import bisect
import dataclasses
import operator
import sys
from collections.abc import (
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    ValuesView,
)
from typing import Any, TypeVar, overload

from outerloop.ledger.records import RunRecord

DETAIL = frozenset({
    "job_ids", "launches", "park_jobs", "park_evals", "feedback", "delivered", "outbox",
    "posted", "publish", "seeds", "pending_request", "report", "hypothesis", "base_sha",
    "branch", "session_id", "pr_head", "published_sha", "climb_job", "wake_job", "deadline",
    "park_seal", "pending_error", "ended_order",
})
"""The fields ``fold.compact`` clears when a run settles: a summary stores one of them
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
                     "refusal", "park_reason"})
"""Kept text repeated across runs: interned, so it is held and pickled once."""
_AT = {name: index for index, name in enumerate(KEPT)}
_RUN_ID, _TARGET, _ISSUE = _AT["run_id"], _AT["target"], _AT["issue"]
_QUEUED_AT = _AT["queued_at"]
_ADMITTED, _OUTAGE, _CLEANED = _AT["admitted"], _AT["outage"], _AT["cleaned"]
_PRUNED, _ARCHIVE, _REPORT_POSTED = _AT["pruned"], _AT["archive"], _AT["report_posted"]


_T = TypeVar("_T")
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
    details: dict[str, Any] | None = row[-1]
    values["hypothesis"] = ""
    if details:
        values.update(details)
    return RunRecord(**values)


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


class _Values(ValuesView[RunRecord]):
    _mapping: Runs

    def __iter__(self) -> Iterator[RunRecord]:
        for entry in self._mapping.entries():
            yield _full(entry)


class _Items(ItemsView[str, RunRecord]):
    _mapping: Runs

    def __iter__(self) -> Iterator[tuple[str, RunRecord]]:
        for run_id, entry in self._mapping.entry_items():
            yield run_id, _full(entry)


Entry = RunRecord | Summary


class Runs(MutableMapping[str, RunRecord]):
    """``run_id -> RunRecord`` in queue order, settled runs held as ``Summary``."""

    __slots__ = ("_all", "_by_issue", "_index", "_live")

    def __init__(self, runs: Mapping[str, RunRecord] | Iterable[tuple[str, Entry]] = ()) -> None:
        source = runs._all if isinstance(runs, Runs) else runs
        self._all: dict[str, Entry] = dict(source)
        self._by_issue: dict[tuple[str, int], list[str]] | None = None
        self._index: tuple[list[tuple[int, str]], dict[str, list[Any]]] | None = None
        self._live = {k: None for k, e in self._all.items() if type(e) is not tuple}
        """The ids not summarised: what ``live()`` lists without a pass over history."""

    # the mapping ---------------------------------------------------------------------

    def __getitem__(self, run_id: str) -> RunRecord:
        entry = self._all[run_id]
        if type(entry) is tuple:
            entry = self._all[run_id] = record(entry)
            self._live[run_id] = self._index = None
        return entry  # type: ignore[return-value]

    @overload
    def get(self, run_id: str, /) -> RunRecord | None: ...

    @overload
    def get(self, run_id: str, /, default: RunRecord | _T) -> RunRecord | _T: ...

    def get(self, run_id: str, /, default: object = None) -> object:  # hot in the fold
        entry = self._all.get(run_id)
        if entry is None:
            return default
        if type(entry) is tuple:
            entry = self._all[run_id] = record(entry)
            self._live[run_id] = self._index = None
        return entry

    def __setitem__(self, run_id: str, run: RunRecord) -> None:
        if run_id not in self._all:
            self._by_issue = None
        self._all[run_id] = run
        self._live[run_id] = self._index = None

    def __delitem__(self, run_id: str) -> None:
        del self._all[run_id]
        self._live.pop(run_id, None)
        self._by_issue = self._index = None

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._all

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def values(self) -> ValuesView[RunRecord]:
        return _Values(self)

    def items(self) -> ItemsView[str, RunRecord]:
        return _Items(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping) and not isinstance(other, Runs):
            other = Runs(other)
        if not isinstance(other, Runs) or list(self._all) != list(other._all):
            return False
        return all(_full(a) == _full(b) for a, b in zip(self._all.values(),
                                                         other._all.values(), strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Runs({len(self.live())} live, {len(self) - len(self.live())} summarised)"

    # pickling: summaries as plain tuples (fast to load), checked against ``KEPT``

    def __getstate__(self) -> tuple[tuple[str, ...], list[str], list[Any]]:
        return KEPT, list(self._all), list(self._all.values())

    def __setstate__(self, state: tuple[tuple[str, ...], list[str], list[Any]]) -> None:
        kept, keys, entries = state
        if kept != KEPT:
            raise ValueError("fold cache from another RunRecord layout")
        self._all = dict(zip(keys, entries, strict=True))
        self._live = {k: None for k, e in self._all.items() if type(e) is not tuple}
        self._by_issue = self._index = None

    # what a tick reads ---------------------------------------------------------------

    def entries(self) -> Iterable[Entry]:
        return self._all.values()

    def entry_items(self) -> Iterable[tuple[str, Entry]]:
        return self._all.items()

    def live(self) -> list[RunRecord]:
        """The runs not summarised (every unsettled run), in queue order (a run read
        back from its summary comes last: it has ended, and no caller orders ended runs
        by this list)."""
        return [self._all[run_id] for run_id in self._live]  # type: ignore[misc]

    def select(self, among: str, since: str | None = None) -> list[RunRecord]:
        """Every live run, and the settled runs in the selection ``among`` (``SELECTIONS``;
        for ``admitted``, queued at ``since`` or later), as records, in queue order. A
        lane then applies its own test: a selection holds every settled run that test
        could accept, so the lane's answer does not change."""
        live, chosen = self._indexes()
        picked = chosen[among]
        if since is not None:
            picked = sorted(item[1:] for item in picked[bisect.bisect_left(picked, (since,)):])
        merged = live + picked if not picked else sorted(live + picked)
        return [_full(self._all[run_id]) for _, run_id in merged]

    def _indexes(self) -> tuple[list[tuple[int, str]], dict[str, list[Any]]]:
        """(position, run id) of the live runs and of each selection's summaries, made
        in one pass and kept until the mapping changes."""
        if self._index is not None:
            return self._index
        live: list[tuple[int, str]] = []
        chosen: dict[str, list[Any]] = {name: [] for name in SELECTIONS}
        outage, unarchived = chosen["outage"], chosen["unarchived"]
        uncleaned, unpruned = chosen["uncleaned"], chosen["unpruned"]
        unreported, admitted = chosen["unreported"], chosen["admitted"]
        for position, (run_id, e) in enumerate(self._all.items()):
            if type(e) is not tuple:
                live.append((position, run_id))
                continue
            item = (position, run_id)
            if e[_OUTAGE]:
                outage.append(item)
            if e[_ARCHIVE] is None:
                unarchived.append(item)
                if not e[_CLEANED]:
                    uncleaned.append(item)
                if not e[_PRUNED]:
                    unpruned.append(item)
            if e[_ISSUE] is not None and not e[_REPORT_POSTED]:
                unreported.append(item)
            if e[_ADMITTED]:
                admitted.append((e[_QUEUED_AT], position, run_id))
        admitted.sort()
        self._index = live, chosen
        return self._index

    def of_issue(self, target: str, issue: int) -> list[RunRecord]:
        """The runs of ``target``'s issue ``issue``, in queue order (an index)."""
        if self._by_issue is None:
            index: dict[tuple[str, int], list[str]] = {}
            for run_id, entry in self._all.items():
                of: tuple[str, int | None] = ((entry.target, entry.issue)
                                              if isinstance(entry, RunRecord)
                                              else (entry[_TARGET], entry[_ISSUE]))
                if of[1] is not None:
                    index.setdefault((of[0], of[1]), []).append(run_id)
            self._by_issue = index
        return [_full(self._all[run_id]) for run_id in self._by_issue.get((target, issue), [])]

    def summarised(self, run_id: str) -> bool:
        return type(self._all.get(run_id)) is tuple

    def same_id(self, run_id: str) -> str:
        """The summarised run's own id object: kept elsewhere too (the fold cache's
        ``final``), it is then held and pickled once."""
        value: str = self._all[run_id][_RUN_ID]  # type: ignore[index]
        return value

    def summarise(self, run_id: str) -> None:
        entry = self._all[run_id]
        if type(entry) is not tuple:
            self._all[run_id] = summarize(entry)  # type: ignore[arg-type]
            self._index = None
            del self._live[run_id]


def _full(entry: Entry) -> RunRecord:
    return entry if isinstance(entry, RunRecord) else record(entry)
