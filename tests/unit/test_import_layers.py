"""Every import of outerloop/ points down the layering written in docs/architecture.md.

The table is the ```layers block of docs/architecture.md (top line = highest layer), so
the document and the check cannot drift apart. Imports are read with ``ast``: module
level, inside functions, under ``TYPE_CHECKING`` alike (a function-level import is as
much a dependency as a top-level one, only a later one).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "outerloop"
ARCHITECTURE = REPO / "docs" / "architecture.md"
ROOT_UNIT = "__init__"

# Arrows that point up today, kept visible until they are fixed: (importer, imported)
# module -> why it is tolerated. A new upward arrow fails the test; so does an entry
# here that no longer occurs (delete it once the arrow is gone).
UPWARD_EXCEPTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Arrow:
    importer: str  # dotted module name relative to outerloop ("" is the package itself)
    imported: str
    line: int

    def where(self) -> str:
        return f"outerloop.{self.importer}:{self.line} imports outerloop.{self.imported}"


def layer_table(text: str) -> list[list[str]]:
    """The ```layers block's lines, highest first, each a list of unit names."""
    lines = text.split("```layers\n", 1)[1].split("```", 1)[0].splitlines()
    return [[u.strip() for u in line.split(",")] for line in lines if line.strip()]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    base = PACKAGE.joinpath(*dotted.split(".")) if dotted else PACKAGE
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def arrows_of(path: Path) -> list[Arrow]:
    return arrows_in(path.read_text(), module_name(path), path.name == "__init__.py")


def arrows_in(source: str, importer: str, is_package: bool) -> list[Arrow]:
    """Every import of an outerloop module in ``source``, resolved to the module imported
    (``from outerloop.run import jobs`` is an arrow to ``run.jobs``)."""
    package = importer if is_package else importer.rpartition(".")[0]
    found: list[Arrow] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = ["outerloop", *package.split(".")] if package else ["outerloop"]
                base = ".".join(parts[: len(parts) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if source != "outerloop" and not source.startswith("outerloop."):
                continue
            relative = source.removeprefix("outerloop").removeprefix(".")
            targets = []
            for alias in node.names:
                sub = f"{relative}.{alias.name}" if relative else alias.name
                targets.append("outerloop." + sub if is_module(sub) else source)
        else:
            continue
        for target in targets:
            if target == "outerloop" or target.startswith("outerloop."):
                imported = target.removeprefix("outerloop").removeprefix(".")
                found.append(Arrow(importer, imported, node.lineno))
    return found


def all_arrows() -> list[Arrow]:
    return [a for p in sorted(PACKAGE.rglob("*.py")) for a in arrows_of(p)]


def unit_of(module: str, units: set[str]) -> str | None:
    """The longest declared unit holding ``module`` (``attempt.claims`` before ``attempt``)."""
    if module == "":
        return ROOT_UNIT if ROOT_UNIT in units else None
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in units:
            return ".".join(parts[:n])
    return None


def upward_arrows(arrows: list[Arrow], table: list[list[str]]) -> list[Arrow]:
    """Arrows between two units whose target is not on a strictly lower line."""
    height = {unit: len(table) - i for i, line in enumerate(table) for unit in line}
    bad = []
    for arrow in arrows:
        src, dst = unit_of(arrow.importer, set(height)), unit_of(arrow.imported, set(height))
        if src is None or dst is None or src == dst:
            continue
        if height[dst] >= height[src]:
            bad.append(arrow)
    return bad


def test_every_module_has_a_layer_when_the_table_is_read() -> None:
    units = {u for line in layer_table(ARCHITECTURE.read_text()) for u in line}
    homeless = sorted(m for p in PACKAGE.rglob("*.py")
                      if unit_of(m := module_name(p), units) is None)
    assert homeless == [], "give these modules a line in docs/architecture.md's layers"


def test_every_import_points_down_when_checked_against_the_layers() -> None:
    table = layer_table(ARCHITECTURE.read_text())
    upward = [a for a in upward_arrows(all_arrows(), table)
              if (a.importer, a.imported) not in UPWARD_EXCEPTIONS]
    assert [a.where() for a in upward] == []


def test_every_tolerated_upward_arrow_still_exists_when_listed() -> None:
    present = {(a.importer, a.imported) for a in all_arrows()}
    assert sorted(set(UPWARD_EXCEPTIONS) - present) == []


def test_agent_tool_imports_only_itself_when_scanned() -> None:
    """It runs in the agent's environment with only the standard library."""
    outside = [a.where() for a in all_arrows()
               if a.importer.startswith("agent_tool") and not a.imported.startswith("agent_tool")]
    assert outside == []


def test_split_package_inits_import_nothing_when_a_module_sits_apart() -> None:
    """A unit like ``attempt.claims`` is imported from lower layers; importing it runs
    ``attempt/__init__.py`` too, so that file must pull in nothing of outerloop."""
    units = {u for line in layer_table(ARCHITECTURE.read_text()) for u in line}
    parents = {u.rpartition(".")[0] for u in units if "." in u}
    pulled = [a.where() for a in all_arrows() if a.importer in parents]
    assert pulled == []


def test_an_upward_import_is_caught_when_a_module_adds_one() -> None:
    """The checker itself: ledger (low) importing kernel.tick (high) is an upward arrow."""
    table = layer_table(ARCHITECTURE.read_text())
    probe = [Arrow("ledger.store", "kernel.tick", 1), Arrow("kernel.tick", "ledger.store", 1),
             Arrow("kernel.lanes.sweep", "kernel.executor", 1),
             Arrow("run.paths", "attempt.session", 1)]
    assert [a.imported for a in upward_arrows(probe, table)] == [
        "kernel.tick", "kernel.executor", "attempt.session"]


def test_imports_are_resolved_when_written_in_every_form() -> None:
    source = ("from outerloop import config, __version__\n"
              "import outerloop.ledger.store\n"
              "from . import common\n"
              "def f():\n"
              "    from outerloop.run import jobs\n"
              "    from ..ledger.state import rebuild\n")
    arrows = arrows_in(source, "kernel.lanes.probe", is_package=False)
    assert sorted(a.imported for a in arrows) == [
        "", "config", "kernel.lanes.common", "kernel.ledger.state", "ledger.store", "run.jobs"]
