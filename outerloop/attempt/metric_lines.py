"""The lines of an eval's stdout that may carry a metric, read over the whole file.

The gate takes the last line carrying the metric; the tamper check counts them. Both
read the same lines through this module, streaming: a candidate can print any amount
(a thread that prints a mebibyte of filler and then a fake line), so no reader may
stop at a window, and none may hold the file in memory. A line is the bytes between
two ``\\n``; a line longer than ``MAX_METRIC_LINE_BYTES`` cannot be a metric line (the
evaluator prints one short JSON object) and is skipped without being held.

A metric line is a JSON object, alone on its line, carrying the metric in either shape
the reference accepts: ``{"<metric>": v}`` or ``{"metric": "<metric>", "value": v}``.

A value is read as an exact decimal and must lie where the gate's arithmetic holds
(``metric_value``): finite, 0 or of magnitude ``MIN_MAGNITUDE`` to ``MAX_MAGNITUDE``,
at most ``MAX_DIGITS`` significant digits. The gate sums and divides in decimals and
runs its sequential test in floats: ``1e999999999999`` raised ``decimal.Overflow`` in
the wake that judged it (at every recovery, issue 46), and past ``1e154`` a squared
difference is a float infinity. Outside that range the reading is refused at parse,
naming the value, and the side is an eval error the agent is told of.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path

MAX_METRIC_LINE_BYTES = 64 * 1024
MAX_MAGNITUDE = Decimal("1e100")
MIN_MAGNITUDE = Decimal("1e-100")
MAX_DIGITS = 50
"""With these, the smallest non-zero difference of two values (``1e-149``) squares to
a normal float and the largest (``2e100``) squares far below float's ``1.8e308``."""
MAX_SHOWN_VALUE_CHARS = 40
CHUNK_BYTES = 1024 * 1024

# A whole line holding a "{": only those can be JSON objects. Anchored at line starts,
# so a long line without one costs one pass, never a rescan from each position.
_BRACED = re.compile(rb"^[^\n{]*\{[^\n]*", re.MULTILINE)


def _braced(body: bytes) -> Iterator[str]:
    for match in _BRACED.finditer(body):
        if match.end() - match.start() <= MAX_METRIC_LINE_BYTES:
            yield match.group().decode("utf-8", "replace")


def braced_lines(path: Path) -> Iterator[str]:
    """The lines of the file at ``path`` that hold a ``{`` and are at most
    ``MAX_METRIC_LINE_BYTES`` long, in order, read in chunks (memory stays below
    ``CHUNK_BYTES + MAX_METRIC_LINE_BYTES`` whatever the file's size). Raises
    ``OSError`` when the file cannot be opened."""
    with path.open("rb") as handle:
        carry = b""  # the start of a line the last chunk cut, at most the cap
        skipping = False  # inside a line already known to be over the cap
        while chunk := handle.read(CHUNK_BYTES):
            if skipping:
                end = chunk.find(b"\n")
                if end == -1:
                    continue
                chunk, skipping = chunk[end + 1:], False
            data = carry + chunk
            last = data.rfind(b"\n")
            if last != -1:
                yield from _braced(data[:last])
                data = data[last + 1:]
            carry = data
            if len(carry) > MAX_METRIC_LINE_BYTES:
                carry, skipping = b"", True
        if carry and not skipping:
            yield from _braced(carry)


def braced_lines_in(text: str) -> Iterator[str]:
    """``braced_lines`` over a text already in memory (the same lines, the same cap)."""
    return _braced(text.encode("utf-8", "replace"))


def json_object(line: str) -> dict[str, object] | None:
    """``line`` as a JSON object (exact decimals; NaN and infinity read as None), or
    None when it is not one alone on its line."""
    line = line.strip()
    if not (line.startswith("{") and line.endswith("}")):
        return None
    try:  # integers as decimals too: a 5,000-digit one is a value to refuse by name
        value = json.loads(line, parse_float=Decimal, parse_int=Decimal,
                           parse_constant=lambda _c: None)
    except (ValueError, InvalidOperation, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def metric_value(raw: object) -> Decimal | str:
    """``raw`` (a JSON value as ``json_object`` reads it) as the metric's exact value,
    or why it is none: not a finite number, or one outside what the gate computes on
    (see the module). A zero's sign is dropped (``-0`` is ``0``)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, Decimal)):
        return "a value that is not a finite number"
    number = Decimal(raw)
    if not number.is_finite():
        return "a value that is not a finite number"
    if number.is_zero():
        return number.copy_abs()
    digits = len(number.as_tuple().digits)
    size = number.copy_abs()  # no context: abs() rounds, and overflows on 1e999999999999
    if size > MAX_MAGNITUDE or size < MIN_MAGNITUDE or digits > MAX_DIGITS:
        return (f"{shown_value(number)}, outside what the gate computes on (0, or a "
                f"magnitude from {MIN_MAGNITUDE} to {MAX_MAGNITUDE}, with at most "
                f"{MAX_DIGITS} significant digits): print the metric in a unit that "
                f"brings it into that range")
    return number


def shown_value(number: Decimal) -> str:
    """``number`` as written, its digits elided past ``MAX_SHOWN_VALUE_CHARS``."""
    text = str(number)
    if len(text) <= MAX_SHOWN_VALUE_CHARS:
        return text
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    lead = "".join(map(str, digits[:12]))
    return (f"{'-' if sign else ''}{lead[0]}.{lead[1:]}...e{exponent + len(digits) - 1} "
            f"({len(digits)} digits)")


def carried(obj: dict[str, object], key: str) -> tuple[bool, object]:
    """(does ``obj`` carry metric ``key``, its raw value), in either shape."""
    if key in obj:
        return True, obj[key]
    if obj.get("metric") == key and "value" in obj:
        return True, obj["value"]
    return False, None


def count_carrying(lines: Iterable[str], key: str) -> int:
    """How many of ``lines`` are metric lines for ``key``."""
    count = 0
    for line in lines:
        obj = json_object(line)
        if obj is not None and carried(obj, key)[0]:
            count += 1
    return count


def count_metric_lines(path: Path, key: str) -> int:
    """How many lines of the stdout file at ``path`` carry ``key`` (0 when unreadable)."""
    try:
        return count_carrying(braced_lines(path), key)
    except OSError:
        return 0
