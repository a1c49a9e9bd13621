"""The channel's layout is named once, in ``agent_tool/layout.py`` (issue 25).

Every string literal under outerloop/ (docstrings aside, templates included) is read;
one that names a file or folder of the channel (``.outerloop/``, ``request.json``,
``syscall.json``, ``limits.json``, the views, ``ask/``, ``answers/``, ``results/``,
``reports/``) outside ``layout.py`` fails, with where it is. The few literals that
share a name with the channel but mean something else are listed with their reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "outerloop"
LAYOUT = PACKAGE / "agent_tool" / "layout.py"

CHANNEL_NAME = re.compile(
    r"\.outerloop/|^\.outerloop$"
    r"|(^|/)(request|syscall|limits|status|history|queue|siblings)\.json$"
    r"|(^|/)(ask|answers|results|reports)/")

NOT_THE_CHANNEL: dict[tuple[str, str], str] = {
    ("board.py", "status.json"): "the board's own status.json, in the research log",
    ("kernel/lanes/record.py", "results/leader.json"): "the research log's leader file",
    ("kernel/lanes/record.py", "reports/"): "the research log's reports folder",
    ("sandbox/proof_links.py", "ask/"): "a made-up path through a planted keys/ link",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            found.update(id(stmt.value) for stmt in body
                         if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
    return found


def channel_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) for each non-docstring string in ``source`` naming the channel."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs and CHANNEL_NAME.search(node.value)]


def template_literals(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if re.search(r"\.outerloop/", line)]


def found_outside_layout() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == LAYOUT:
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        found += [(rel, line, value) for line, value in channel_literals(path.read_text())]
    for path in sorted((PACKAGE / "templates").glob("*.j2")):
        rel = path.relative_to(PACKAGE).as_posix()
        found += [(rel, line, value) for line, value in template_literals(path.read_text())]
    return found


def test_no_module_names_a_channel_file_when_layout_is_its_home() -> None:
    stray = [f"outerloop/{rel}:{line}: {value!r}" for rel, line, value in found_outside_layout()
             if not any(rel == r and value.startswith(v) for r, v in NOT_THE_CHANNEL)]
    assert not stray, "take these from outerloop/agent_tool/layout.py:\n" + "\n".join(stray)


def test_every_listed_other_meaning_still_occurs_when_listed() -> None:
    present = {(rel, value) for rel, _, value in found_outside_layout()}
    gone = [key for key in NOT_THE_CHANNEL
            if not any(rel == key[0] and value.startswith(key[1]) for rel, value in present)]
    assert gone == []


def test_a_channel_literal_is_found_when_a_module_writes_one() -> None:
    """The checker itself: a literal counts, a docstring and the home directory do not."""
    source = ('"""Reads ``.outerloop/limits.json``."""\n'
              'A = ".outerloop/syscall"\nB = "limits.json"\nC = "~/.outerloop"\n'
              'def f():\n    """``ask/x.json``."""\n    return f"answers/{A}"\n')
    assert channel_literals(source) == [(2, ".outerloop/syscall"), (3, "limits.json"),
                                        (7, "answers/")]
