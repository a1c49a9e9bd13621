"""How alike two submitted changes are, from a small sketch of each.

A change key (``attempt/change_key.py``) is ``EXACT.SKETCH``: ``EXACT`` hashes the
whole normalised change, so two keys with the same ``EXACT`` are the same change; the
sketch is a bottom-``SKETCH_SIZE`` sample of the change's changed lines (each path's
normalised lines added or removed against the base, hashed with the benchmark and the
base tree, so changes on different bases or benchmarks share nothing). From two sketches
the Jaccard likeness of the two sets of changed lines is estimated (exact when a change
has at most ``SKETCH_SIZE`` changed lines); at ``NEAR_IDENTICAL`` or more the changes are
near-identical: a later one on the target is told the earlier verdict, measured no more.

What that threshold means: with 0.9, a change of 10 or more changed lines that shares
all but one with an earlier one (an added comment, a log line) repeats it. A new
setting of a constant alters one line (two differ: the old setting and the new), so
it repeats a change of about 20 lines or more, and not a smaller one: in a one-line
change (``0.4`` to ``0.5``, then ``0.6``) only the removed line is shared (1/3). Only
other runs' changes are compared so (``attempt/change_key.py``): within its own run an
agent's next setting is measured. ``bench/novelty.py`` prints what this catches on a
history with repeats. A key without a sketch (a ledger from before sketches) is only
ever alike in full.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

SKETCH_SIZE = 12
"""How many of a change's smallest line hashes its key keeps (8 hex digits each)."""
NEAR_IDENTICAL = 0.9
"""The likeness from which a change repeats an earlier one on the target."""
_HASH_HEX = 8


def sketch(elements: Iterable[str], salt: str) -> str:
    """The ``SKETCH_SIZE`` smallest hashes of ``elements`` (salted), in hex, ascending."""
    hashes = {hashlib.sha256(f"{salt}\0{e}".encode("utf-8", "surrogateescape"))
              .hexdigest()[:_HASH_HEX] for e in elements}
    return "".join(sorted(hashes)[:SKETCH_SIZE])


def keyed(exact: str, lines_sketch: str) -> str:
    """A change key: the exact hash, then its sketch when it has one."""
    return f"{exact}.{lines_sketch}" if lines_sketch else exact


def exact_part(change: str) -> str:
    """The exact hash of a change key (what a verdict carries)."""
    return change.split(".", 1)[0]


def _hashes(change: str) -> set[str] | None:
    _, dot, rest = change.partition(".")
    if not dot or not rest or len(rest) % _HASH_HEX:
        return None
    return {rest[i:i + _HASH_HEX] for i in range(0, len(rest), _HASH_HEX)}


def likeness(a: str, b: str) -> float:
    """How alike changes ``a`` and ``b`` are, 0..1: 1 when their exact hashes match,
    else the estimated Jaccard likeness of their changed lines (0 without sketches)."""
    if not a or not b:
        return 0.0
    if exact_part(a) == exact_part(b):
        return 1.0
    left, right = _hashes(a), _hashes(b)
    if not left or not right:
        return 0.0
    union = sorted(left | right)[:SKETCH_SIZE]
    return sum(1 for h in union if h in left and h in right) / len(union)
