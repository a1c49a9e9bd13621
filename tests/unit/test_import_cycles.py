"""No import cycle in outerloop/, between modules or between packages (issue 25).

The graph is read with ``ast`` from the source: every import of an outerloop module,
at module level or inside a function (a function-level import is a dependency too, only
a later one). Imports under ``if TYPE_CHECKING:`` do not count: they never run, so
they cannot make an import order matter; they only name types. An import of
``outerloop.a.b`` is an arrow to module ``a.b`` (not to the package ``a``, whose
``__init__`` imports nothing: ``test_import_layers.py`` checks that).

A package here is a top-level unit of outerloop/: a subpackage (``kernel``, ``attempt``)
or a top-level module (``budgets``). There must be no cycle at either level: a failure
names the loop (``a -> b -> a``) and the import line behind each arrow.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.unit.test_import_layers import arrows_in

PACKAGE = Path(__file__).resolve().parents[2] / "outerloop"

def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """The lines inside ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
            if name == "TYPE_CHECKING":
                lines.update(inner.lineno for stmt in node.body for inner in ast.walk(stmt)
                             if hasattr(inner, "lineno"))
    return lines


def imports_in(source: str, importer: str, is_package: bool) -> dict[str, int]:
    """The outerloop modules ``source`` imports (names relative to outerloop), each with
    the line of its first import: ``test_import_layers.arrows_in``'s arrows, but those
    under ``TYPE_CHECKING``."""
    skipped = _type_checking_lines(ast.parse(source))
    found: dict[str, int] = {}
    for arrow in arrows_in(source, importer, is_package):
        if arrow.line not in skipped and arrow.imported != importer:
            found[arrow.imported] = min(found.get(arrow.imported, arrow.line), arrow.line)
    return found


Graph = dict[str, dict[str, int]]
"""Importer -> {imported: line of the import}."""


def module_graph(package: Path = PACKAGE) -> Graph:
    return {module_name(p, package): imports_in(p.read_text(), module_name(p, package),
                                                p.name == "__init__.py")
            for p in sorted(package.rglob("*.py"))}


def package_of(module: str) -> str:
    return module.split(".")[0] if module else "__init__"


def package_graph(modules: Graph) -> dict[str, dict[str, str]]:
    """Package -> {package it imports: one import that makes the arrow, as a witness}."""
    graph: dict[str, dict[str, str]] = {}
    for importer, imported in sorted(modules.items()):
        for target, line in sorted(imported.items()):
            if package_of(importer) != package_of(target):
                graph.setdefault(package_of(importer), {}).setdefault(
                    package_of(target), f"{importer}:{line} imports {target}")
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected parts with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def loop_through(graph: Mapping[str, Iterable[str]], part: list[str]) -> list[str]:
    """One shortest loop from the part's first node back to it, staying in the part:
    ``[a, b, a]``."""
    start, inside = part[0], set(part)
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [*reversed(path), start]
                if nxt in inside and nxt not in came:
                    came[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise AssertionError(f"{part} is not a cycle")


def describe_module_cycles(graph: Graph) -> list[str]:
    """Each cycle as ``a -> b -> a``, then where each arrow is imported."""
    out = []
    for part in cycles(graph):
        loop = loop_through(graph, part)
        where = "; ".join(f"{a}:{graph[a][b]} imports {b}" for a, b in itertools.pairwise(loop))
        out.append(f"module cycle {' -> '.join(loop)} ({where}) among {', '.join(part)}")
    return out


def describe_package_cycles(graph: dict[str, dict[str, str]]) -> list[str]:
    out = []
    for part in cycles(graph):
        loop = loop_through(graph, part)
        where = "; ".join(graph[a][b] for a, b in itertools.pairwise(loop))
        out.append(f"package cycle {' -> '.join(loop)} ({where}) among {', '.join(part)}")
    return out


def test_no_module_imports_itself_back_when_the_graph_is_read() -> None:
    found = describe_module_cycles(module_graph())
    assert not found, "\n".join(found)


def test_no_package_imports_itself_back_when_the_graph_is_read() -> None:
    found = describe_package_cycles(package_graph(module_graph()))
    assert not found, "\n".join(found)


def test_a_cycle_is_named_when_two_modules_import_each_other() -> None:
    """The checker itself, on a made-up graph: a function-level import counts, one under
    TYPE_CHECKING does not."""
    a = imports_in("def f():\n    from outerloop.ledger import store\n", "ledger.chain", False)
    b = imports_in("from outerloop.ledger import chain\n", "ledger.store", False)
    typed = imports_in("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from outerloop.ledger import chain\n", "ledger.store", False)
    assert describe_module_cycles({"ledger.chain": a, "ledger.store": b}) == [
        "module cycle ledger.chain -> ledger.store -> ledger.chain (ledger.chain:2 imports "
        "ledger.store; ledger.store:1 imports ledger.chain) among ledger.chain, ledger.store"]
    assert cycles({"ledger.chain": a, "ledger.store": typed}) == []
    packages = package_graph({"kernel.x": {"attempt.y": 3}, "attempt.y": {"kernel.z": 7}})
    assert describe_package_cycles(packages) == [
        "package cycle attempt -> kernel -> attempt (attempt.y:7 imports kernel.z; "
        "kernel.x:3 imports attempt.y) among attempt, kernel"]
