"""Settled runs summarised: ``State.runs`` without a full record per run ever recorded.

A settled run (ended, reported, recorded, none of its jobs live: ``compaction.compact``) has
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
act on or count: indexes made in one pass over the summaries; housekeeping's cut at an
ending, ``ended_by``, so it builds a record only for a run old enough to be due) and
``of_issue`` (an index), so a quiet tick never builds a record per settled run.
"""

from __future__ import annotations

import bisect
import copy
import operator
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    ValuesView,
)
from datetime import datetime
from typing import Any, TypeVar, overload

from outerloop.clock import now as clock_now
from outerloop.ledger.cold import (
    REMAKE_AHEAD_S,
    SPILL_AT,
    ColdPart,
    DueAfter,
    Horizons,
    horizons,
    hot,
    make_part,
)
from outerloop.ledger.records import RunRecord
from outerloop.ledger.summary import (
    ADMITTED,
    ARCHIVE,
    BY_ENDING,
    CLEANED,
    ENDED_AT,
    IN,
    ISSUE,
    KEPT,
    OUTAGE,
    PRUNED,
    QUEUED_AT,
    REPORT_POSTED,
    RUN_ID,
    SELECTIONS,
    TALLIED,
    TARGET,
    Summary,
    record,
    summarize,
)
from outerloop.ledger.tally import Tally, facts

_T = TypeVar("_T")



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
_BY_STAMP = BY_ENDING | {"admitted"}
"""The selections indexed by a stamp (ending; ``queued_at``), then queue order."""
_STAMP = operator.itemgetter(0)



ColdLoader = Callable[[str], list[tuple[int, str, Summary]]]


class Runs(MutableMapping[str, RunRecord]):
    """``run_id -> RunRecord`` in queue order, settled runs held as ``Summary``; most of
    those (``ColdPart``) are loaded only when something reads them."""

    __slots__ = ("_all", "_by_issue", "_cold", "_cold_ids", "_index", "_live", "_loaded",
                 "_next", "_pos", "_shadowed", "due_after", "loader", "tally")

    def __init__(self, runs: Mapping[str, RunRecord] | Iterable[tuple[str, Entry]] = ()) -> None:
        if isinstance(runs, Runs):
            runs._load()
            source: Any = runs._all
        else:
            source = runs
        self._all: dict[str, Entry] = dict(source)
        self._by_issue: dict[tuple[str, int], list[str]] | None = None
        self._index: dict[str, list[Any]] | None = None
        self._live = {k: None for k, e in self._all.items() if type(e) is not tuple}
        """The ids not summarised: what ``live()`` lists without a pass over history."""
        self._pos = {run_id: n for n, run_id in enumerate(self._all)}
        """Each run's place in queue order, kept across the cold part's loads."""
        self._next = len(self._all)
        self._cold: ColdPart | None = None
        """The part not loaded yet (None: everything is in ``_all``)."""
        self._loaded: ColdPart | None = None
        """The part loaded (its summaries, untouched, are ``_cold_ids``)."""
        self._cold_ids: set[str] = set()
        self._shadowed: set[str] = set()
        """Runs of the cold part's file read back since (or removed): their entry here
        wins, the file's is stale. The file is made again when these, or the runs
        settled since it was made, reach ``SPILL_AT``."""
        self.loader: ColdLoader | None = None
        """Reads the cold part's summaries by token (set by ``ledger/rebuild.py``)."""
        self.due_after: DueAfter | None = None
        """When housekeeping acts on a settled run (``cold.DueAfter``): told by the tick,
        kept in the cache; None: not told (``cold.hot``)."""
        self.tally = Tally()
        """The settled runs folded for the views (``ledger/tally.py``). Summaries given
        here (not a ``Runs``) were folded nowhere this mapping knows: fold them again."""
        if isinstance(runs, Runs):
            self.tally = copy.deepcopy(runs.tally)
        elif any(type(e) is tuple for e in self._all.values()):
            self.tally.stale = True

    def _load(self) -> None:
        """Bring the cold part into ``_all``, in queue order."""
        cold = self._cold
        if cold is None:
            return
        if self.loader is None:
            raise ValueError("the fold cache's settled runs cannot be loaded (no loader)")
        shadowed = self._shadowed
        rows = [row for row in self.loader(cold.token) if row[1] not in shadowed]
        merged = [(self._pos[k], k, e) for k, e in self._all.items()]
        merged.extend(rows)
        merged.sort(key=operator.itemgetter(0))
        self._all = {run_id: entry for _, run_id, entry in merged}
        self._pos.update((run_id, pos) for pos, run_id, _ in rows)
        self._cold_ids = {run_id for _, run_id, _ in rows}
        self._cold, self._loaded = None, cold
        self._by_issue = self._index = None

    def _touched(self, run_id: str) -> None:
        if run_id in self._cold_ids:
            self._cold_ids.discard(run_id)
            self._shadowed.add(run_id)

    def cold_part(self, token: str, now: datetime | None = None
                  ) -> list[tuple[int, str, Summary]] | None:
        """Before a save: the summaries to keep apart under ``token`` (those not hot at
        ``now``: ``ledger/cold.py``), or None when the part kept apart is unchanged."""
        moment = now or clock_now()
        ahead = horizons(self.due_after, moment)
        part = self._cold if self._cold is not None else self._loaded
        if part is not None:
            if self._waiting(ahead) < SPILL_AT and not part.comes_due(
                    horizons(self.due_after, moment, REMAKE_AHEAD_S)):
                return None  # a few settled since: they wait in the cache itself
            self._load()
        rows = [(self._pos[run_id], run_id, e) for run_id, e in self._all.items()
                if type(e) is tuple and not hot(e, ahead)]
        self._loaded = make_part(token, rows, moment)
        self._cold_ids = {run_id for _, run_id, _ in rows}
        self._shadowed = set()
        return rows

    def _waiting(self, ahead: Horizons | None) -> int:
        """The summaries settled (or changed) since the cold part was made that are not
        hot, counted up to ``SPILL_AT``: they wait in the cache itself until that many."""
        waiting = len(self._shadowed)
        cold_ids = self._cold_ids
        for run_id, e in self._all.items():
            if type(e) is tuple and run_id not in cold_ids and not hot(e, ahead):
                waiting += 1
                if waiting >= SPILL_AT:
                    break
        return waiting

    def cold_token(self) -> str | None:
        """The token of the cold part this mapping stands on (None: none)."""
        part = self._cold if self._cold is not None else self._loaded
        return part.token if part is not None else None

    def _needs(self, among: str, since: str | None, ended_by: str | None) -> bool:
        """Whether the unloaded cold part may hold runs of the selection ``among`` (queued
        at ``since`` or later, ended by ``ended_by``)."""
        return self._cold is not None and self._cold.needs(among, since, ended_by)

    # the mapping ---------------------------------------------------------------------

    def __getitem__(self, run_id: str) -> RunRecord:
        entry = self._all.get(run_id)
        if entry is None:
            if self._cold is None:
                raise KeyError(run_id)
            self._load()
            entry = self._all[run_id]
        if type(entry) is tuple:
            entry = self._all[run_id] = record(entry)
            self._live[run_id] = None
            self._touched(run_id)
        return entry  # type: ignore[return-value]

    @overload
    def get(self, run_id: str, /) -> RunRecord | None: ...

    @overload
    def get(self, run_id: str, /, default: RunRecord | _T) -> RunRecord | _T: ...

    def get(self, run_id: str, /, default: object = None) -> object:  # hot in the fold
        entry = self._all.get(run_id)
        if entry is None:
            if self._cold is None or not run_id:
                return default
            self._load()
            entry = self._all.get(run_id)
            if entry is None:
                return default
        if type(entry) is tuple:
            entry = self._all[run_id] = record(entry)
            self._live[run_id] = None
            self._touched(run_id)
        return entry

    def __setitem__(self, run_id: str, run: RunRecord) -> None:
        if run_id not in self:
            self._by_issue = None
            self._pos[run_id] = self._next
            self._next += 1
        else:
            old = self._all[run_id]
            if old is not run and _tallied(old) != run.tallied:
                self.tally.forget(_tallied(old))
        self._all[run_id] = run
        self._live[run_id] = None
        self._touched(run_id)

    def __delitem__(self, run_id: str) -> None:
        self._load()
        self.tally.forget(_tallied(self._all[run_id]))
        del self._all[run_id]
        del self._pos[run_id]
        self._live.pop(run_id, None)
        self._by_issue = None
        self._touched(run_id)

    def __contains__(self, run_id: object) -> bool:
        if run_id in self._all:
            return True
        if self._cold is None:
            return False
        self._load()
        return run_id in self._all

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(self._all)

    def __len__(self) -> int:
        if self._cold is None:
            return len(self._all)
        return len(self._all) + self._cold.count - len(self._shadowed)

    def values(self) -> ValuesView[RunRecord]:
        return _Values(self)

    def items(self) -> ItemsView[str, RunRecord]:
        return _Items(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping) and not isinstance(other, Runs):
            other = Runs(other)
        if not isinstance(other, Runs):
            return False
        self._load()
        other._load()
        if list(self._all) != list(other._all):
            return False
        return all(_full(a) == _full(b) for a, b in zip(self._all.values(),
                                                         other._all.values(), strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Runs({len(self.live())} live, {len(self) - len(self.live())} summarised)"

    # pickling: summaries as plain tuples (fast to load), checked against ``KEPT``

    def __getstate__(self) -> tuple[tuple[str, ...], list[str], list[Any], list[int],
                                    int, ColdPart | None, list[str], Tally, DueAfter | None]:
        """Every entry but the cold part's (``cold_part`` made it; its summaries are
        pickled apart), with their places in queue order."""
        apart = self._cold if self._cold is not None else self._loaded
        cold = self._cold_ids if self._cold is None else set()
        keys = [k for k in self._all if k not in cold] if cold else list(self._all)
        return (KEPT, keys, [self._all[k] for k in keys], [self._pos[k] for k in keys],
                self._next, apart, sorted(self._shadowed) if apart is not None else [],
                self.tally, self.due_after)

    def __copy__(self) -> Runs:
        runs = Runs(self.entry_items())
        runs.tally = copy.deepcopy(self.tally)
        return runs

    def __deepcopy__(self, memo: dict[int, Any]) -> Runs:
        """A whole copy (its cold part loaded): a copy has no cache to load it from."""
        runs = Runs((run_id, copy.deepcopy(entry, memo)) for run_id, entry in self.entry_items())
        runs.tally = copy.deepcopy(self.tally, memo)
        return runs

    def __setstate__(self, state: tuple[tuple[str, ...], list[str], list[Any], list[int],
                                        int, ColdPart | None, list[str], Tally,
                                        DueAfter | None]) -> None:
        kept, keys, entries, places, following, apart, shadowed, tally, due_after = state
        if kept != KEPT:
            raise ValueError("fold cache from another RunRecord layout")
        self._all = dict(zip(keys, entries, strict=True))
        self._live = {k: None for k, e in self._all.items() if type(e) is not tuple}
        self._pos = dict(zip(keys, places, strict=True))
        self._next = following
        self._cold, self._loaded, self._cold_ids = apart, None, set()
        self._shadowed = set(shadowed)
        self._by_issue = self._index = None
        self.loader = None
        self.tally = tally
        self.due_after = due_after

    # what a tick reads ---------------------------------------------------------------

    def entries(self) -> Iterable[Entry]:
        self._load()
        return self._all.values()

    def entry_items(self) -> Iterable[tuple[str, Entry]]:
        self._load()
        return self._all.items()

    def live(self) -> list[RunRecord]:
        """The runs not summarised (every unsettled run), in queue order (a run read
        back from its summary comes last: it has ended, and no caller orders ended runs
        by this list)."""
        return [self._all[run_id] for run_id in self._live]  # type: ignore[misc]

    def select(self, among: str, since: str | None = None,
               ended_by: str | None = None) -> list[RunRecord]:
        """Every live run, and the settled runs in the selection ``among`` (``SELECTIONS``;
        for ``admitted``, queued at ``since`` or later; for one of ``BY_ENDING``, with
        ``ended_by``, ended at that stamp or before, or with no ending), as records, in
        queue order. A lane then applies its own test: a selection holds every settled
        run that test could accept, so the lane's answer does not change."""
        if since is not None and among != "admitted":
            raise ValueError(f"select({among!r}) takes no since")
        if ended_by is not None and among not in BY_ENDING:
            raise ValueError(f"select({among!r}) takes no ended_by")
        if self._needs(among, since, ended_by):
            self._load()
        live, chosen = self._indexes()
        picked = chosen[among]
        if among in _BY_STAMP:
            if since is not None:
                picked = picked[bisect.bisect_left(picked, (since,)):]
            if ended_by is not None:
                picked = picked[:bisect.bisect_right(picked, ended_by, key=_STAMP)]
            picked = [item[1:] for item in picked]
        picked = self._current(among, picked)
        merged = live + picked if not picked else sorted(live + picked)  # queue order
        return [_full(self._all[run_id]) for _, run_id in merged]

    def _current(self, among: str, picked: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """``picked`` less what the mapping changed since the index was made: runs read
        back (now live) or gone, summaries that left the selection, repeats."""
        test, entries, seen = IN[among], self._all, set()
        kept = []
        for item in picked:
            e = entries.get(item[1])
            if type(e) is tuple and test(e) and item[1] not in seen:
                seen.add(item[1])
                kept.append(item)
        return kept

    def _indexes(self) -> tuple[list[tuple[int, str]], dict[str, list[Any]]]:
        """(position, run id) of the live runs, and of each selection's summaries (with
        the stamp the selection is sorted by first: ``_BY_STAMP``). The selections are
        made in one pass over the summaries, then kept as the mapping changes: a run
        summarised is added (``_index_add``), one read back or gone is skipped when read
        (``_current``). Only a load of the cold part makes them again."""
        live = sorted((self._pos[run_id], run_id) for run_id in self._live)
        if self._index is not None:
            return live, self._index
        chosen: dict[str, list[Any]] = {name: [] for name in SELECTIONS}
        self._index = chosen
        outage, unarchived = chosen["outage"], chosen["unarchived"]
        uncleaned, unpruned = chosen["uncleaned"], chosen["unpruned"]
        unreported, admitted = chosen["unreported"], chosen["admitted"]
        places = self._pos
        for run_id, e in self._all.items():  # summary.IN's tests, inline: one pass, fast
            if type(e) is not tuple:
                continue
            position = places[run_id]
            if e[OUTAGE]:
                outage.append((position, run_id))
            if e[ARCHIVE] is None:
                ending = (e[ENDED_AT] or "", position, run_id)
                unarchived.append(ending)
                if not e[CLEANED]:
                    uncleaned.append(ending)
                if not e[PRUNED]:
                    unpruned.append(ending)
            if e[ISSUE] is not None and not e[REPORT_POSTED]:
                unreported.append((position, run_id))
            if e[ADMITTED]:
                admitted.append((e[QUEUED_AT], position, run_id))
        for by_stamp in _BY_STAMP:
            chosen[by_stamp].sort()  # in queue order already, or nearly: a quick sort
        return live, chosen

    def _index_add(self, run_id: str, e: Summary) -> None:
        """The summary ``e`` into the selections it is in (``summary.IN``), each kept in
        order."""
        chosen = self._index
        if chosen is None:
            return
        position = self._pos[run_id]
        for among in SELECTIONS:
            if not IN[among](e):
                continue
            if among == "admitted":
                item: tuple[Any, ...] = (e[QUEUED_AT], position, run_id)
            elif among in BY_ENDING:
                item = (e[ENDED_AT] or "", position, run_id)
            else:
                item = (position, run_id)
            bisect.insort(chosen[among], item)

    def of_issue(self, target: str, issue: int) -> list[RunRecord]:
        """The runs of ``target``'s issue ``issue``, in queue order (an index)."""
        if self._cold is not None and self._cold.answered(target, issue):
            self._load()
        if self._by_issue is None:
            index: dict[tuple[str, int], list[str]] = {}
            for run_id, entry in self._all.items():
                of: tuple[str, int | None] = ((entry.target, entry.issue)
                                              if isinstance(entry, RunRecord)
                                              else (entry[TARGET], entry[ISSUE]))
                if of[1] is not None:
                    index.setdefault((of[0], of[1]), []).append(run_id)
            self._by_issue = index
        return [_full(self._all[run_id]) for run_id in self._by_issue.get((target, issue), [])]

    def summarised(self, run_id: str) -> bool:
        if run_id and run_id not in self._all and self._cold is not None:
            self._load()
        return type(self._all.get(run_id)) is tuple

    def same_id(self, run_id: str) -> str:
        """The summarised run's own id object: kept elsewhere too (the fold cache's
        ``final``), it is then held and pickled once."""
        if run_id not in self._all:
            self._load()
        value: str = self._all[run_id][RUN_ID]  # type: ignore[index]
        return value

    def summarise(self, run_id: str) -> None:
        """Hold the settled run as a summary, folded into the views' tally."""
        entry = self._all[run_id]
        if isinstance(entry, RunRecord):
            summary = self._all[run_id] = self.tally.settle(entry, summarize)
            del self._live[run_id]
            self._index_add(run_id, summary)

    def fresh_tally(self) -> Tally:
        """The tally, folded again first when it is stale (reads every tallied run)."""
        if not self.tally.stale:
            return self.tally
        folded: list[tuple[RunRecord, Summary]] = []
        for run_id, e in list(self.entry_items()):  # every summary, and the runs read back
            if type(e) is not tuple and not _tallied(e):
                continue
            run = _full(e)
            digest = facts(run)
            if run.tallied != digest:
                run.tallied = digest
                if type(e) is tuple:  # the summary carries the mark it is folded with
                    self._all[run_id] = e = summarize(run)
            folded.append((run, e if type(e) is tuple else summarize(run)))
        self.tally.refold(folded)
        return self.tally

    def admitted_since(self, since: str, target: str | None = None) -> int:
        """How many settled runs (of ``target``; None: any) were admitted and queued at
        ``since`` or later, from the index: no record is built."""
        known = self._cold.admitted_count(since, target) if self._cold is not None else 0
        if known is None:
            self._load()
            known = 0
        picked = self._indexes()[1]["admitted"]
        now = self._current("admitted", [item[1:] for item in
                                          picked[bisect.bisect_left(picked, (since,)):]])
        if target is None:
            return known + len(now)
        entries = self._all
        return known + sum(1 for _, run_id in now if _target(entries[run_id]) == target)


def _target(entry: Entry) -> str:
    return entry.target if isinstance(entry, RunRecord) else str(entry[TARGET])


def _tallied(entry: Entry) -> str:
    return entry.tallied if isinstance(entry, RunRecord) else str(entry[TALLIED])


def _full(entry: Entry) -> RunRecord:
    return entry if isinstance(entry, RunRecord) else record(entry)
