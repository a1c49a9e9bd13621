"""``State.runs``: the live runs in memory, the settled ones in the history index.

``Runs`` is a mapping ``run_id -> RunRecord`` in queue order. A run not settled is held
as its record (``live()``); a settled one (``compaction.compact`` calls ``summarise``)
is a row of ``ledger/history_index.py`` and costs the state nothing. Reading a settled
run by id (``runs[id]``, ``runs.get(id)``) brings it back whole and live again: the fold
updates it (an archive, a clean, a late job end) and the next ``compact`` settles it
again, writing its row over. Until then its row is hidden (``_hidden``).

What a tick reads every time is ``live()``, the named selections (``select``: SQL over
the rows, then the live runs) and ``of_issue``: no record is built for a settled run
that no lane may act on. Iterating ``values()``/``items()`` reads every row (views over
all history: ``status``).
"""

from __future__ import annotations

import copy
from collections.abc import ItemsView, Iterator, Mapping, MutableMapping, ValuesView
from typing import Any, TypeVar, overload

import msgspec

from outerloop.errors import OuterloopError
from outerloop.ledger.admitted import AdmittedWeek, Held
from outerloop.ledger.history_index import (
    BY_ENDING,
    SELECTIONS,
    HistoryIndex,
    decode,
    encode,
    row_of,
)
from outerloop.ledger.records import RunRecord
from outerloop.ledger.tally import Tally, facts

_T = TypeVar("_T")


class _Values(ValuesView[RunRecord]):
    _mapping: Runs

    def __iter__(self) -> Iterator[RunRecord]:
        for _, run in self._mapping.ordered():
            yield run


class _Items(ItemsView[str, RunRecord]):
    _mapping: Runs

    def __iter__(self) -> Iterator[tuple[str, RunRecord]]:
        yield from self._mapping.ordered()


class Runs(MutableMapping[str, RunRecord]):
    """``run_id -> RunRecord`` in queue order; settled runs are rows of ``index``."""

    __slots__ = ("_hidden", "_live", "_next", "_pos", "admitted", "index", "tally")

    def __init__(self, runs: Mapping[str, RunRecord] | None = None) -> None:
        self._live: dict[str, RunRecord] = {}
        """The runs held as records: every unsettled run, and those read back."""
        self._pos: dict[str, int] = {}
        """Each live run's place in queue order (a row keeps its own)."""
        self._hidden: set[str] = set()
        """Runs whose row is stale: read back (live again) or removed."""
        self._next = 0
        self.index = HistoryIndex()
        self.tally = Tally()
        """The settled runs folded for the views (``ledger/tally.py``)."""
        self.admitted = AdmittedWeek()
        """The settled admitted runs of the last week (``ledger/admitted.py``)."""
        if isinstance(runs, Runs):
            self._adopt(runs)
        elif runs:
            for run_id, run in runs.items():
                self[run_id] = run

    def _adopt(self, other: Runs) -> None:
        self._live = dict(other._live)
        self._pos = dict(other._pos)
        self._hidden = set(other._hidden)
        self._next = other._next
        self.index = other.index.copy()
        self.tally = copy.deepcopy(other.tally)
        self.admitted = other.admitted.copy()

    # the mapping ---------------------------------------------------------------------

    def _row(self, run_id: str) -> tuple[int, RunRecord] | None:
        if not run_id or run_id in self._hidden:
            return None
        found = self.index.get(run_id)
        return None if found is None else (found[0], self._decode(run_id, found[2]))

    def _decode(self, run_id: str, blob: bytes) -> RunRecord:
        """A row's record; one that cannot be read removes the home's database (derived:
        the next tick folds the ledger from the start) and says so."""
        try:
            return decode(blob)
        except (msgspec.MsgspecError, TypeError, AttributeError, ValueError) as exc:
            where = self.index.path or "memory"
            self.index.discard()
            raise OuterloopError(
                f"the history index's row of run {run_id} ({where}) cannot be read "
                f"({type(exc).__name__}: {exc}); the index was removed, so the next tick "
                f"folds the ledger from the start (nothing is lost: the ledger is whole)"
            ) from exc

    def _read_back(self, run_id: str) -> RunRecord | None:
        found = self._row(run_id)
        if found is None:
            return None
        pos, run = found
        self._live[run_id], self._pos[run_id] = run, pos
        self._hidden.add(run_id)
        self.admitted.remove(run)
        return run

    def __getitem__(self, run_id: str) -> RunRecord:
        run = self._live.get(run_id)
        if run is None:
            run = self._read_back(run_id)
            if run is None:
                raise KeyError(run_id)
        return run

    @overload
    def get(self, run_id: str, /) -> RunRecord | None: ...

    @overload
    def get(self, run_id: str, /, default: RunRecord | _T) -> RunRecord | _T: ...

    def get(self, run_id: str, /, default: object = None) -> object:  # hot in the fold
        run = self._live.get(run_id)
        if run is None:
            run = self._read_back(run_id)
            if run is None:
                return default
        return run

    def __setitem__(self, run_id: str, run: RunRecord) -> None:
        old = self._live.get(run_id)
        if old is None:
            found = self._row(run_id)
            if found is None:
                self._pos[run_id] = self._next
                self._next += 1
            else:
                self._pos[run_id], old = found
                self._hidden.add(run_id)
                self.admitted.remove(old)
        if old is not None and old is not run and old.tallied != run.tallied:
            self.tally.forget(old.tallied)
        self._live[run_id] = run

    def __delitem__(self, run_id: str) -> None:
        run = self[run_id]
        self.tally.forget(run.tallied)
        del self._live[run_id]
        del self._pos[run_id]
        self.index.drop(run_id)

    def __contains__(self, run_id: object) -> bool:
        if run_id in self._live:
            return True
        return isinstance(run_id, str) and self._row_exists(run_id)

    def _row_exists(self, run_id: str) -> bool:
        return bool(run_id) and run_id not in self._hidden and \
            self.index.get(run_id) is not None

    def ordered(self) -> Iterator[tuple[str, RunRecord]]:
        """Every run, in queue order (each settled one decoded on the way)."""
        live = sorted((pos, run_id) for run_id, pos in self._pos.items())
        at = 0
        for pos, run_id, blob in self.index.every():
            if self._stale(run_id):
                continue
            while at < len(live) and live[at][0] < pos:
                yield live[at][1], self._live[live[at][1]]
                at += 1
            yield run_id, self._decode(run_id, blob)
        for _, run_id in live[at:]:
            yield run_id, self._live[run_id]

    def __iter__(self) -> Iterator[str]:
        return (run_id for run_id, _ in self.ordered())

    def __len__(self) -> int:
        return len(self._live) + self.index.count() - self.index.holding(
            self._hidden.union(self._live))

    def _stale(self, run_id: str) -> bool:
        """A row to pass over: its run is live here (read back, or settled by a process
        that saved after this state was loaded) or was removed."""
        return run_id in self._live or run_id in self._hidden

    def values(self) -> ValuesView[RunRecord]:
        return _Values(self)

    def items(self) -> ItemsView[str, RunRecord]:
        return _Items(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping) and not isinstance(other, Runs):
            other = Runs(other)
        if not isinstance(other, Runs):
            return False
        return list(self.ordered()) == list(other.ordered())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Runs({len(self._live)} live, {len(self) - len(self._live)} settled)"

    # the fold cache holds the live part; the rows are the index's

    def __getstate__(self) -> tuple[dict[str, RunRecord], dict[str, int], list[str], int,
                                    Tally, Held]:
        self.admitted.prune()
        return (self._live, self._pos, sorted(self._hidden), self._next, self.tally,
                self.admitted.held())

    def __setstate__(self, state: tuple[dict[str, RunRecord], dict[str, int], list[str],
                                        int, Tally, Held]) -> None:
        live, places, hidden, following, tally, admitted = state
        self._live, self._pos, self._hidden = live, places, set(hidden)
        self._next, self.tally = following, tally
        self.admitted = AdmittedWeek(admitted)
        self.index = HistoryIndex()

    def __copy__(self) -> Runs:
        return Runs(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Runs:
        runs = Runs(self)
        runs._live = copy.deepcopy(self._live, memo)
        return runs

    # what a tick reads ---------------------------------------------------------------

    def live_ids(self) -> list[str]:
        return list(self._live)

    def live(self) -> list[RunRecord]:
        """The runs held as records (every unsettled run), in the order they became live
        (a run read back comes last: it has ended, and no caller orders ended runs by
        this list)."""
        return list(self._live.values())

    def _with_live(self, found: list[tuple[int, str, bytes]]) -> list[RunRecord]:
        """The live runs and the rows ``found`` (less hidden ones), in queue order."""
        merged: list[tuple[int, str, RunRecord | bytes]] = [
            (pos, run_id, blob) for pos, run_id, blob in found if not self._stale(run_id)]
        merged.extend((self._pos[run_id], run_id, run) for run_id, run in self._live.items())
        merged.sort(key=lambda item: item[0])
        return [item[2] if isinstance(item[2], RunRecord) else self._decode(item[1], item[2])
                for item in merged]

    def select(self, among: str, since: str | None = None,
               ended_by: str | None = None) -> list[RunRecord]:
        """Every live run, and the settled runs in the selection ``among`` (``SELECTIONS``;
        for ``admitted``, queued at ``since`` or later; for one of ``BY_ENDING``, with
        ``ended_by``, ended at that stamp or before, or with no ending), as records, in
        queue order. A lane then applies its own test: a selection holds every settled
        run that test could accept, so the lane's answer does not change."""
        if among not in SELECTIONS:
            raise ValueError(f"select({among!r}): no such selection")
        if since is not None and among != "admitted":
            raise ValueError(f"select({among!r}) takes no since")
        if ended_by is not None and among not in BY_ENDING:
            raise ValueError(f"select({among!r}) takes no ended_by")
        return self._with_live(self.index.select(among, since, ended_by))

    def of_issue(self, target: str, issue: int) -> list[RunRecord]:
        """The runs of ``target``'s issue ``issue``, in queue order."""
        found = self.index.of_issue(target, issue)
        merged: list[tuple[int, RunRecord]] = [
            (pos, self._decode(run_id, blob)) for pos, run_id, blob in found
            if not self._stale(run_id)]
        merged.extend((self._pos[run.run_id], run) for run in self._live.values()
                      if run.issue == issue and run.target == target)
        merged.sort(key=lambda item: item[0])
        return [run for _, run in merged]

    def summarised(self, run_id: str) -> bool:
        """Settled and held as a row (not read back)."""
        return run_id not in self._live and self._row_exists(run_id)

    def summarise(self, run_id: str) -> None:
        """The settled run into the index, folded into the views' tally."""
        run = self._live.pop(run_id)
        blob = self.tally.settle(run, encode)  # encoded once ``run.tallied`` is set
        self.index.put([row_of(run, self._pos.pop(run_id), blob)])
        self._hidden.discard(run_id)
        self.admitted.add(run)

    def fresh_tally(self) -> Tally:
        """The tally, folded again first when it is stale (reads every tallied run)."""
        if not self.tally.stale:
            return self.tally
        folded: list[tuple[RunRecord, bytes]] = []
        rewritten = []
        for run_id, run in list(self.ordered()):
            settled = run_id not in self._live
            if not settled and not run.tallied:
                continue
            digest = facts(run)
            changed, run.tallied = run.tallied != digest, digest
            blob = encode(run)
            if settled and changed:  # the row carries the mark it is folded with
                rewritten.append(row_of(run, self._position(run_id), blob))
            folded.append((run, blob))
        self.index.put(rewritten)
        self.tally.refold(folded)
        return self.tally

    def _position(self, run_id: str) -> int:
        found = self.index.get(run_id)
        assert found is not None
        return found[0]

    def admitted_since(self, since: str, target: str | None = None) -> int:
        """How many settled runs (of ``target``; None: any) were admitted and queued at
        ``since`` or later: from the week held with the state (``admitted``, a
        bisection), else (an older ``since``) counted in the index."""
        held = self.admitted.count(since, target)
        if held is not None:
            return held
        return self.index.admitted_count(since, target, self._hidden.union(self._live))
