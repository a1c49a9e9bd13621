"""The tamper analysis's reading of shutdown printers (issue 47), as defence in depth.

A candidate running in the process that prints the metric can comment the evaluator's
line out (``print("# ", end="")``) and print its own at interpreter shutdown from a
finaliser. The spellings seen: a suspended generator's ``finally:``, a class-level
``__del__ = f``, a ``type()``-built class with ``"__" + "del__"``, and a
``logging.Handler.close()`` that logging's own exit hook runs. This module names those
spellings; it cannot name every one, which is why the number comes from a trusted
scorer (docs/contract.md, "Scorer first") and no guarantee rests on this reading.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from outerloop.attempt.tamper_names import constant_str

GENERATOR_FINALLY = ("prints from a generator's finally: (it runs when the suspended "
                     "generator is collected, at interpreter exit, after the evaluator printed)")
HANDLER_CLOSE = ("defines {q}.close(), which logging's exit hook runs at interpreter exit, "
                 "after the evaluator printed")
DEL_NAME = "builds a finaliser by name ({q}) that may run after the evaluator printed its result"
OPEN_LINE = ("prints {q} without ending its line, which turns the next line printed (the "
             "evaluator's result) into part of its own")
WRITES = frozenset({"print", "write", "writelines"})


def exit_printers(nodes: list[ast.AST]) -> Iterator[tuple[ast.AST, str]]:
    """(node, meaning) for each shutdown-printer spelling among ``nodes`` (a parsed
    file's every node)."""
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            yield from _in_class(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _generator(node):
            yield from _printing_finally(node)
        elif isinstance(node, ast.Call):
            yield from _open_line(node)
        elif isinstance(node, (ast.Constant, ast.BinOp)) and constant_str(node) == "__del__":
            yield node, DEL_NAME.format(q="__del__")


def _in_class(node: ast.ClassDef) -> Iterator[tuple[ast.AST, str]]:
    handler = next((name for name in map(_name, node.bases)
                    if name is not None and name.split(".")[-1].endswith("Handler")), None)
    for stmt in node.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == "__del__" for t in targets):
                yield stmt, DEL_NAME.format(q="__del__ =")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and handler \
                and stmt.name == "close":
            yield stmt, HANDLER_CLOSE.format(q=handler)


def _generator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node))


def _printing_finally(node: ast.FunctionDef | ast.AsyncFunctionDef
                      ) -> Iterator[tuple[ast.AST, str]]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Try) and any(
                isinstance(n, ast.Call) and _callee(n) in WRITES
                for stmt in inner.finalbody for n in ast.walk(stmt)):
            yield inner.finalbody[0], GENERATOR_FINALLY


def _open_line(node: ast.Call) -> Iterator[tuple[ast.AST, str]]:
    if _callee(node) != "print":
        return
    end = next((k.value for k in node.keywords if k.arg == "end"), None)
    if end is None:
        return
    ending = constant_str(end)
    if ending is not None and "\n" in ending:
        return
    for arg in node.args:
        text = constant_str(arg)
        if text is not None and text.lstrip().startswith(("#", "//", ";")):
            yield node, OPEN_LINE.format(q=repr(text[:20]))


def _callee(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _name(node: ast.AST) -> str | None:
    """``logging.Handler`` of a base written as a dotted name; None otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        outer = _name(node.value)
        return f"{outer}.{node.attr}" if outer is not None else None
    return None
