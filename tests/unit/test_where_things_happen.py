"""docs/architecture.md's "Where things happen" table points at code that exists.

Each backticked dotted name in the table's right-hand column is a module of
``outerloop`` followed by an attribute path (``kernel.lock.TickLock.acquire``); a
``tests/...`` path must be a file. The table must answer the questions the house asked
of it (issue 25) in one hop each.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
QUESTIONS = ("noise floor", "hidden seed", "preemption", "secret scan", "a new forge",
             "sandbox policy", "a second tick", "GPU-hours charged",
             "a claim or an admission waits", "effective limits", "verdict", "channel layout")


def _rows() -> list[tuple[str, str]]:
    text = DOC.read_text()
    block = text.split("<!-- where-things-happen -->", 1)[1].split(
        "<!-- /where-things-happen -->", 1)[0]
    rows = []
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and not set(cells[1]) <= {"-", " "} and cells[0] != "behaviour":
            rows.append((cells[0], cells[1]))
    return rows


def resolves(name: str) -> bool:
    """``name`` is ``module.attr...`` under outerloop: the longest importable module
    prefix, then every attribute after it."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module("outerloop." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _names(where: str) -> list[str]:
    return [n for n in re.findall(r"`([^`]+)`", where)
            if re.fullmatch(r"[a-z_]+(\.[A-Za-z_]+)+", n)]


def test_every_name_in_the_table_exists_when_imported() -> None:
    missing = [name for _, where in _rows() for name in _names(where) if not resolves(name)]
    paths = [p for _, where in _rows() for p in re.findall(r"`(tests/[^`]+)`", where)
             if not (REPO / p).is_file()]
    assert not missing and not paths, f"the table names code that is not there: {missing + paths}"


def test_every_row_names_code_when_read() -> None:
    rows = _rows()
    assert len(rows) >= len(QUESTIONS)
    assert all(_names(where) for _, where in rows), [b for b, w in rows if not _names(w)]


def test_the_table_answers_the_houses_questions_when_read() -> None:
    behaviours = " ".join(b for b, _ in _rows())
    assert [q for q in QUESTIONS if q not in behaviours] == []


def test_a_name_that_moved_is_caught_when_resolved() -> None:
    assert resolves("kernel.lock.TickLock.acquire")
    assert not resolves("kernel.lock.TickLock.take")
    assert not resolves("kernel.nowhere.run")
