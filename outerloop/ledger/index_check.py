"""``outerloop verify``'s check of the history index against the ledger.

The index (``ledger/history_index.py``) is derived: its rows must be what a fold of the
ledger from its first line settles. So the home's state is folded twice, from its cache
(the rows the home's database holds, and what the ledger added since) and cold (every
row made again, in a temporary in-memory database), each compacted as a tick would,
and the two sets of rows compared run by run. Neither fold writes anything. A mismatch
is reported (``Report.index``), not a problem of the ledger: the index is made again
from the ledger by removing it (``docs/operate.md``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from outerloop.ledger.compaction import compact
from outerloop.ledger.history_index import COLUMNS, INDEX_FILE, decode
from outerloop.ledger.rebuild import rebuild
from outerloop.ledger.runs import Runs

MAX_NAMED = 20
"""Mismatched runs named one by one; more are counted."""
_RECORD = COLUMNS.index("record")


def _rows(runs: Runs) -> dict[str, tuple[object, ...]]:
    hidden = set(runs.live_ids())
    return {str(row[0]): row for row in runs.index.rows() if row[0] not in hidden}


def _differs(warm: tuple[object, ...], cold: tuple[object, ...]) -> Iterator[str]:
    """What differs between two rows of a run (its place in queue order aside: a
    warm fold numbers runs as it meets them)."""
    for name, a, b in zip(COLUMNS, warm, cold, strict=True):
        if name in ("pos", "record"):
            continue
        if a != b:
            yield f"{name} {a!r} (index) vs {b!r} (ledger)"
    held, folded = decode(warm[_RECORD]), decode(cold[_RECORD])  # type: ignore[arg-type]
    if held != folded:
        fields = [f for f in held.__dataclass_fields__
                  if getattr(held, f) != getattr(folded, f)]
        yield f"its record differs ({', '.join(fields)})"


def check_index(home: Path) -> tuple[int, list[str]]:
    """(rows checked, mismatches named) of the home's history index against the ledger;
    nothing to check (no index yet): (0, [])."""
    if not (home / INDEX_FILE).exists():
        return 0, []
    warm = rebuild(home, save_cache=False)
    compact(warm)
    cold = rebuild(home, use_cache=False, save_cache=False)
    compact(cold)
    held, folded = _rows(warm.runs), _rows(cold.runs)
    found: list[str] = []
    for run_id in sorted(held.keys() - folded.keys()):
        found.append(f"{run_id}: in the index, not settled by the ledger")
    for run_id in sorted(folded.keys() - held.keys()):
        found.append(f"{run_id}: settled by the ledger, not in the index")
    for run_id in sorted(held.keys() & folded.keys()):
        what = list(_differs(held[run_id], folded[run_id]))
        if what:
            found.append(f"{run_id}: " + "; ".join(what))
    if len(found) > MAX_NAMED:
        found[MAX_NAMED:] = [f"... and {len(found) - MAX_NAMED} more runs"]
    return len(held), found
