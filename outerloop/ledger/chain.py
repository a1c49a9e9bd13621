"""The hash chain of a ledger file: each line names the hash of the line before it.

Every line a writer appends ends with ``"prev":"<hex>"``: the first ``PREV_HEX``
hex digits of the SHA-256 of the previous line's bytes (without its ``\\n``), or
``GENESIS`` for a file's first line. Editing, deleting, inserting or reordering a line
breaks the link of the line after it; only a writer that recomputes every later link
can hide an edit, and the head attestation (``ledger/attest.py``, an HMAC under a key
the agent cannot read) then no longer matches.

Where ``prev`` sits: last in the JSON object, as ``,"prev":"<24 hex>"}``, so a line
still starts with its ``kind`` (msgspec decodes a tagged union fastest when the tag is
first) and ``prev`` is read at a fixed offset from the line's end, without decoding.
The decoders ignore the field (msgspec skips unknown fields).

Old ledgers: lines written before this version carry no ``prev``; a file's chain
starts at its first line that does (that line's ``prev`` still names the line before
it), and the lines before it are unchained. After the chain started, a line without
``prev`` is a break, unless it is not an event at all (a torn line a crash cut short,
terminated by the next writer, who chained its own line from it: the link into the
next line covers it).

Lines are the file's ``\\n``-terminated segments, blank ones too (a writer never
writes one, so an inserted blank line breaks the chain). A torn last line (no ``\\n``)
is not a line yet.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

PREV_HEX = 24
"""96 bits of SHA-256: no one finds a second line with the same link by search."""
GENESIS = "0" * PREV_HEX
"""The ``prev`` of a file's first line."""
_SUFFIX_HEAD = b',"prev":"'
_SUFFIX_LEN = len(_SUFFIX_HEAD) + PREV_HEX + 2  # ,"prev":"<hex>"}
_HEX = frozenset(b"0123456789abcdef")
_sha256 = hashlib.sha256
TAIL_STEP = 65536


def line_hash(line: bytes) -> str:
    """The link a line's successor names: SHA-256 of its bytes (no ``\\n``), short hex."""
    return _sha256(line).hexdigest()[:PREV_HEX]


def with_prev(encoded: bytes, link: str) -> bytes:
    """A JSON object's bytes with ``"prev": link`` added last."""
    return encoded[:-1] + _SUFFIX_HEAD + link.encode("ascii") + b'"}'


def prev_of(line: bytes) -> str | None:
    """The ``prev`` a line names (None: the line carries none)."""
    if len(line) < _SUFFIX_LEN + 1 or not line.endswith(b'"}'):
        return None
    start = len(line) - _SUFFIX_LEN
    if line[start:start + len(_SUFFIX_HEAD)] != _SUFFIX_HEAD:
        return None
    value = line[start + len(_SUFFIX_HEAD):-2]
    if not _HEX.issuperset(value):
        return None
    return value.decode("ascii")


def _is_event(line: bytes) -> bool:
    from outerloop.ledger.decode import decode_lines

    events, bad = decode_lines([line])
    return bool(events) and not bad


@dataclass(slots=True)
class Link:
    """Where a file's chain stands after some of its lines: the hash of the last line
    (``GENESIS`` before the first) and whether the chain has started."""

    value: str = GENESIS
    chained: bool = False


@dataclass(frozen=True, slots=True)
class Break:
    """A line whose link does not hold: its number (1-based) and what is wrong."""

    line: int
    what: str


def follow(link: Link, lines: list[bytes], first: int, *, all_breaks: bool = False
           ) -> list[Break]:
    """Check ``lines`` (the file's lines ``first``, ``first + 1``, ... without their
    ``\\n``) against the chain and move ``link`` past them. Stops at the first break
    (the link then stands on the broken line) unless ``all_breaks``.

    The common case (every line chained and whole) is checked for the batch at once:
    one hash per line and one list comparison, about half the cost of a line-by-line
    loop (which only runs when that fails: a break, old unchained lines, a torn line)."""
    if not lines:
        return []
    hashes = [_sha256(line).hexdigest()[:PREV_HEX] for line in lines]
    wanted = [f',"prev":"{value}"}}'.encode() for value in [link.value, *hashes[:-1]]]
    if [line[-_SUFFIX_LEN:] for line in lines] == wanted:
        link.value, link.chained = hashes[-1], True
        return []
    return _follow_each(link, lines, first, hashes, all_breaks)


def _follow_each(link: Link, lines: list[bytes], first: int, hashes: list[str],
                 all_breaks: bool) -> list[Break]:
    found: list[Break] = []
    for index, line in enumerate(lines):
        number = first + index
        prev = prev_of(line)
        if prev is not None:
            if prev != link.value:
                found.append(Break(number, _mismatch(number, link)))
            link.chained = True
        elif link.chained and _is_event(line):
            found.append(Break(number, f"line {number} carries no prev though the chain "
                                       f"started before it (inserted by hand, or by a "
                                       f"writer older than the hash chain)"))
        link.value = hashes[index]
        if found and not all_breaks:
            break
    return found


def _mismatch(number: int, link: Link) -> str:
    if number == 1:
        return "line 1 does not start the chain (lines before it deleted?)"
    return (f"line {number}'s prev does not match line {number - 1} (a line before it "
            f"was edited, deleted, inserted or moved)")


def split(data: bytes) -> list[bytes]:
    """The ``\\n``-terminated lines of ``data`` (blank ones too), without ``\\n``."""
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]


def walk(data: bytes, link: Link | None = None, first: int = 1) -> tuple[Link, list[Break]]:
    """Every break among the complete lines of ``data``, and where the chain ends."""
    link = Link() if link is None else link
    return link, follow(link, split(data), first, all_breaks=True)


def last_line(fd: int, size: int) -> bytes | None:
    """The last line of the open file ``fd`` of ``size`` bytes, as the next append will
    leave it: a torn tail (no ``\\n``) is the line the append terminates. None: empty."""
    if size <= 0:
        return None
    end = size - 1 if os.pread(fd, 1, size - 1) == b"\n" else size
    chunks: list[bytes] = []
    pos = end
    while pos > 0:
        start = max(0, pos - TAIL_STEP)
        chunk = os.pread(fd, pos - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            chunks.append(chunk[cut + 1:])
            break
        chunks.append(chunk)
        pos = start
    return b"".join(reversed(chunks))
