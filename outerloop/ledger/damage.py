"""Where a ledger file is damaged: unreadable lines and missing ones, by file and line.

The fold skips what it cannot read (a torn line terminated by the next writer, a line
edited by hand) and cannot see a line that was deleted. Both would silently change
what the ledger says, so the first fold that meets them names each one: the file, the
line number, and what is wrong (``ledger/rebuild.py`` records them in ``State.damaged``;
the tick prints new ones in its notes and ``outerloop doctor`` lists them all).

A deleted line shows as a gap in the file's ``seq`` numbers (each writer numbers its
lines 1, 2, 3, ...). Only called when a chunk had an unreadable line or a gap, so the
common case costs one pass over the sequence numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from outerloop.ledger import events as ev
from outerloop.ledger.decode import decode_lines

MAX_DAMAGED = 200
"""``State.damaged`` keeps the latest this many (one bad file could hold thousands)."""
PREVIEW_CHARS = 60


def seq_follows(parsed: Sequence[ev.Decoded], last_seq: int) -> bool:
    """True when the events' ``seq`` run on from ``last_seq`` with no gap."""
    return all(event.seq == last_seq + index for index, event in enumerate(parsed, 1))


def locate(path: Path, key: str, offset: int, first_line: int,
           last_seq: int) -> list[tuple[str, int, str]]:
    """``(file, line, what)`` for each unreadable line and each gap in ``seq`` among
    the complete lines of ``path`` from byte ``offset`` (line ``first_line``)."""
    with path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read()
    complete = data[: data.rfind(b"\n") + 1]
    found: list[tuple[str, int, str]] = []
    expected = last_seq
    explained = False
    for number, line in enumerate(complete.split(b"\n")[:-1], first_line):
        if not line.strip():
            continue
        events, bad = decode_lines([line])
        if bad or not events:
            preview = line[:PREVIEW_CHARS].decode("utf-8", "replace")
            found.append((key, number, f"unreadable line dropped from the fold: {preview!r}"))
            explained = True
            continue
        seq = int(events[0].seq)
        if seq > expected + 1 and not explained:
            missing = (f"line seq {expected + 1} is" if seq == expected + 2 else
                       f"lines seq {expected + 1}..{seq - 1} are")
            found.append((key, number, f"{missing} missing before this one (deleted?)"))
        expected, explained = max(expected, seq), False
    return found
