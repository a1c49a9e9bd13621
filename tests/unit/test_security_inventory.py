"""docs/security.md's inventory stays true: every place kernel code starts a process or
runs git, tar or pip is named there, with what it runs over and, where that is
agent-written content, the rule that makes it safe and a test that exists.

The sites are found in the code, not listed by hand: a call of ``localgit``'s git
runners, of ``subprocess``/``child_wait``'s process starters, of ``run_process_group``,
of ``os.exec*``/``os.spawn*`` or of ``tarfile.open``, named by module and enclosing
function. A new site the inventory does not name, a row naming a site that is gone, a
row over agent content without a rule or a test, and a test that does not exist each
fail here (so a kernel ``git --work-tree ws ...`` added in a new function cannot land
unreviewed)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "outerloop"
DOC = ROOT / "docs" / "security.md"
START = "<!-- inventory:tools:start -->"
END = "<!-- inventory:tools:end -->"
CONTENT_START = "<!-- inventory:content:start -->"
CONTENT_END = "<!-- inventory:content:end -->"
SPAWNERS = frozenset({"run", "Popen", "check_output", "call", "check_call"})
SPAWN_MODULES = frozenset({"subprocess", "child_wait"})
OVER_KINDS = ("agent", "confined", "kernel")
SITE_RE = re.compile(r"`(outerloop/[\w/]+\.py::[\w.<>]+)`")
TEST_RE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _localgit_runners() -> frozenset[str]:
    """The public functions of ``forge/localgit.py`` that run git."""
    tree = ast.parse((PACKAGE / "forge" / "localgit.py").read_text())
    found = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and _name(call.func) in {"git", "git_text",
                                                                      "Popen"}:
                    found.add(node.name)
                    break
    return frozenset(found)


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _receiver(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id
    return None


def _site_kind(call: ast.Call, uses_localgit: bool, runners: frozenset[str]) -> str | None:
    name, receiver = _name(call.func), _receiver(call.func)
    if uses_localgit and name in runners and (receiver in {"g", "localgit"}
                                              or isinstance(call.func, ast.Name)):
        return "git"
    if name in SPAWNERS and receiver in SPAWN_MODULES:
        return "process"
    if name == "run_process_group":
        return "process"
    if receiver == "os" and name and name.startswith(("exec", "spawn", "posix_spawn")):
        return "process"
    if receiver == "tarfile" and name == "open":
        return "tar"
    return None


def code_sites() -> dict[str, set[str]]:
    """``module::function`` -> the kinds of tool call made there, for all of outerloop/."""
    runners = _localgit_runners()
    sites: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        uses_localgit = "localgit" in text and rel != "outerloop/forge/localgit.py"

        def visit(node: ast.AST, qual: list[str], rel: str = rel,
                  uses_localgit: bool = uses_localgit) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    visit(child, [*qual, child.name])
                    continue
                if isinstance(child, ast.Call):
                    kind = _site_kind(child, uses_localgit, runners)
                    if kind:
                        site = f"{rel}::{'.'.join(qual) or '<module>'}"
                        sites.setdefault(site, set()).add(kind)
                visit(child, qual)

        visit(ast.parse(text), [])
    return sites


def _table(start: str, end: str) -> list[list[str]]:
    text = DOC.read_text()
    assert start in text and end in text, f"docs/security.md lost its {start} block"
    block = text.split(start, 1)[1].split(end, 1)[0]
    rows = []
    for line in block.splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0].lower() in {"site", "content"}:
            continue
        rows.append(cells)
    return rows


def inventory_rows() -> list[tuple[list[str], str, str, str]]:
    """(sites, over, rule, tests) for each row of the tool inventory."""
    rows = []
    for cells in _table(START, END):
        assert len(cells) == 4, f"an inventory row needs 4 cells (site|over|rule|test): {cells}"
        rows.append((SITE_RE.findall(cells[0]), cells[1], cells[2], cells[3]))
    return rows


def _missing_tests(cell: str) -> list[str]:
    missing = []
    for file, func in TEST_RE.findall(cell):
        path = ROOT / file
        if not path.is_file() or not re.search(rf"^\s*(async )?def {func}\(",
                                               path.read_text(), re.M):
            missing.append(f"{file}::{func}")
    return missing


def test_every_tool_call_in_the_kernel_is_in_the_inventory() -> None:
    listed = {site for sites, *_ in inventory_rows() for site in sites}
    unlisted = sorted(set(code_sites()) - listed)
    assert not unlisted, (
        "kernel code starts a process, runs git or tar at sites docs/security.md's "
        "inventory does not name (add a row: what it runs over, the rule, the test): "
        f"{unlisted}")


def test_the_inventory_names_no_site_that_is_gone() -> None:
    stale = sorted({site for sites, *_ in inventory_rows() for site in sites}
                   - set(code_sites()))
    assert not stale, f"docs/security.md's inventory names sites no longer in the code: {stale}"


def test_each_row_over_agent_bytes_has_a_rule_and_an_existing_test() -> None:
    for sites, over, rule, tests in inventory_rows():
        assert sites, f"an inventory row names no site: {over} {rule}"
        kind = over.split(":", 1)[0].strip("* ").lower()
        assert kind in OVER_KINDS, f"{sites}: 'over' must start with one of {OVER_KINDS}"
        if kind in {"agent", "confined"}:
            assert len(rule) > 20, f"{sites}: a row over agent bytes needs its rule"
            assert TEST_RE.search(tests), f"{sites}: a row over agent bytes needs a test"
        assert not _missing_tests(tests), f"{sites}: no such test {_missing_tests(tests)}"


def test_the_content_inventory_names_existing_tests() -> None:
    rows = _table(CONTENT_START, CONTENT_END)
    assert len(rows) >= 10, "the content inventory lists the kinds of agent bytes"
    for cells in rows:
        assert TEST_RE.search(cells[-1]), f"{cells[0]}: no test named"
        assert not _missing_tests(cells[-1]), f"{cells[0]}: {_missing_tests(cells[-1])}"


def test_the_scanner_finds_a_work_tree_git_call_in_a_new_function(tmp_path: Path) -> None:
    """The scanner itself: a new kernel function running git over a work tree is a site."""
    source = ("from outerloop.forge import localgit as g\n"
              "def peek(ws):\n    g.git(['--work-tree', str(ws), 'add', '-A'])\n"
              "def spawn():\n    import subprocess\n    subprocess.run(['tar', 'x'])\n")
    runners = _localgit_runners()
    kinds = [_site_kind(node, True, runners) for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call)]
    assert kinds.count("git") == 1 and kinds.count("process") == 1
