"""New ledger lines, read and folded in the fold's order without holding them all.

A rebuild folds every new line of every file in ``(lc, at, file, seq)`` order. Sorting
them all at once held every decoded event (a cold fold of 100,000 runs: 4 million
events, 4 GB). Within one file the order already holds (``lc`` strictly increases; lines
from before ``lc`` are in time order), so the files are merged instead (a k-way merge):
each file enters the merge at its first line's place, is read only when that place is
due, a chunk at a time, and its events leave memory once folded. A run file is thus
decoded around the time its run lived, and memory is bounded by the files open at once
and the fold's state, not by history.

A file whose lines are not in order after all (a clock that stepped back before ``lc``
existed) is caught when its chunk is read (an event would fold before one already
folded); the caller then folds the old way: everything read, sorted, folded.

Each chunk's lines are checked against the file's hash chain (``ledger/chain.py``) as
they are read, from the link the fold's mark kept: a line that does not chain stops
the fold (``ChainBroken``); the caller treats the file as damaged.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TypeVar

from outerloop.ledger import chain, damage
from outerloop.ledger import events as ev
from outerloop.ledger.decode import decode_lines

CHUNK_BYTES = 4 << 20
"""A big file (the tick's) is read this much at a time."""
PEEK_BYTES = 4096
Order = tuple[int, str, str, int]
FIRST: Order = (-1, "", "", 0)
"""A file whose first line cannot be read at a peek enters the merge first."""


class Unordered(Exception):
    """A file's lines are not in the fold's order: fold everything sorted instead."""


class ChainBroken(Exception):
    """A new line of ``key`` does not chain from the line before it."""

    def __init__(self, key: str, broken: chain.Break) -> None:
        super().__init__(f"{key}: {broken.what}")
        self.key = key
        self.broken = broken


@dataclass(slots=True)
class Source:
    """One file's new bytes: from ``offset`` (line ``lines`` + 1, after ``last_seq``)."""

    key: str
    path: str
    offset: int
    lines: int
    last_seq: int
    link: chain.Link = field(default_factory=chain.Link)
    """The chain at ``offset`` (moved on as lines are read)."""
    malformed: int = 0
    damaged: list[tuple[str, int, str]] = field(default_factory=list)
    read: int = 0
    """Events read so far."""
    _events: list[tuple[Order, ev.Decoded]] = field(default_factory=list)
    _next: int = 0
    _eof: bool = False

    def peek(self) -> Order:
        """The place of the first new line (``FIRST`` when it cannot be read cheaply)."""
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read(PEEK_BYTES)
        cut = data.find(b"\n")
        if cut < 0:
            return FIRST
        parsed, bad = decode_lines([data[:cut]])
        if bad or not parsed:
            return FIRST
        event = parsed[0]
        return (event.lc, event.at, self.key, event.seq)

    def fill(self) -> bool:
        """Read and decode the next chunk, sorted; False when nothing is left."""
        while not self._eof:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(CHUNK_BYTES)
                if len(data) == CHUNK_BYTES and data.rfind(b"\n") < 0:
                    data += handle.read()  # one line longer than a chunk
            if len(data) < CHUNK_BYTES:
                self._eof = True
            complete = data[: data.rfind(b"\n") + 1]
            if not complete:
                self._eof = True
                break
            every = complete.split(b"\n")[:-1]
            broken = chain.follow(self.link, every, self.lines + 1)
            if broken:
                raise ChainBroken(self.key, broken[0])
            lines = [line for line in every if line.strip()]
            parsed, bad = decode_lines(lines)
            self.malformed += bad
            if bad or not damage.seq_follows(parsed, self.last_seq):
                self.damaged.extend(damage.locate(Path(self.path), self.key, self.offset,
                                                  self.lines + 1, self.last_seq))
            self.offset += len(complete)
            self.lines += complete.count(b"\n")
            self.last_seq = max([self.last_seq, *(e.seq for e in parsed)])
            self.read += len(parsed)
            if parsed:
                key = self.key
                # by the fold's order only: two lines alike in it (a line written twice)
                # keep the file's order; compared whole, two events raised TypeError
                self._events = sorted((((e.lc, e.at, key, e.seq), e) for e in parsed),
                                      key=itemgetter(0))
                self._next = 0
                return True
        self._events, self._next = [], 0
        return False

    def read_all(self) -> list[tuple[Order, ev.Decoded]]:
        out: list[tuple[Order, ev.Decoded]] = []
        while self.fill():
            out.extend(self._events)
        self._events = []
        return out


_S = TypeVar("_S")


def fold_merged(sources: list[Source], state: _S, fold: Callable[[_S, str, ev.Decoded], None],
                every: int = 0, pause: Callable[[], None] | None = None) -> int:
    """Fold every source's events in order (``fold(state, file, event)``); ``pause()``
    runs after each ``every`` events (the caller compacts). Returns the events folded;
    raises ``Unordered`` (having folded some) when a file is out of order."""
    heap: list[tuple[Order, int, Source]] = []
    for index, source in enumerate(sources):
        heap.append((source.peek(), index, source))
    heapq.heapify(heap)
    started: set[int] = set()
    last: Order = FIRST
    folded = 0
    due = every
    while heap:
        _, index, source = heapq.heappop(heap)
        if index not in started:
            started.add(index)
            if not source.fill():
                continue
            if source._events[0][0] < last:
                raise Unordered(source.key)
            heapq.heappush(heap, (source._events[0][0], index, source))
            continue
        bound = heap[0][0] if heap else None
        events, at = source._events, source._next
        while True:
            order, event = events[at]
            if bound is not None and order > bound:
                break
            fold(state, source.key, event)
            last = order
            folded += 1
            at += 1
            if folded == due and every and pause is not None:
                pause()
                due += every
            if at == len(events):
                if not source.fill():
                    events = []
                    break
                events, at = source._events, 0
                if events[0][0] < last:
                    raise Unordered(source.key)
        source._next = at
        if events:
            heapq.heappush(heap, (events[at][0], index, source))
    return folded

