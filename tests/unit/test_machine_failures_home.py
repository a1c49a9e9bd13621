"""Preemption and infrastructure failure have one home: ``outerloop/infra.py``.

The job script, the observation, the results, the eval pairs and the sweep each need to
know that a job the machine stopped is not the agent's failure. Each imports that
knowledge from ``infra`` (the states, the words, the overrun rule) instead of writing
its own copy: a copy drifts (``gone`` once ended a job for the ledger and not for
compute). Read with ``ast``; docstrings may talk about preemption freely.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "outerloop"
HOME = PACKAGE / "infra.py"
USERS = ("compute/jobscript.py", "compute/slurm_parse.py", "attempt/results.py",
         "attempt/pair_flow.py", "kernel/lanes/sweep.py")
"""The job script, the observation, the results, the eval pairs, the sweep."""
MACHINE_WORDS = ("infrastructure", "preempted")
MACHINE_STATES = {"NODE_FAIL", "INTERRUPTED"}


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)} | {
        id(node.value) for node in ast.walk(tree)  # attribute docstrings
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def copies_in(source: str) -> list[tuple[int, str]]:
    """Where ``source`` spells the machine's words in a string, or groups the machine's
    job states (``{JobState.NODE_FAIL, JobState.INTERRUPTED}``) on its own."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docs:
            found += [(node.lineno, w) for w in MACHINE_WORDS if w in node.value]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = {e.attr for e in node.elts if isinstance(e, ast.Attribute)}
            if names == MACHINE_STATES and len(node.elts) == 2:  # the group itself
                found.append((node.lineno, "NODE_FAIL + INTERRUPTED"))
    return found


def imports_infra(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "outerloop.infra":
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "outerloop" \
                and any(alias.name == "infra" for alias in node.names):
            return True
    return False


def test_no_module_but_infra_writes_the_machines_words_or_groups_its_states() -> None:
    copies = [f"outerloop/{p.relative_to(PACKAGE)}:{line}: {what}"
              for p in sorted(PACKAGE.rglob("*.py")) if p != HOME
              for line, what in copies_in(p.read_text())]
    assert copies == [], "spelled again outside outerloop/infra.py (import it):\n" + \
        "\n".join(copies)


def test_the_job_script_observation_results_pairs_and_sweep_all_use_infra() -> None:
    missing = [name for name in USERS if not imports_infra((PACKAGE / name).read_text())]
    assert missing == [], f"these no longer take the machine's failures from infra: {missing}"


def test_the_check_finds_a_copy_when_one_is_written() -> None:
    copy = ('REASON = "preempted: not a verdict"\n'
            'ENDS = frozenset({JobState.NODE_FAIL, JobState.INTERRUPTED})\n'
            'def f() -> None:\n    """Preempted jobs: infrastructure."""\n')
    assert copies_in(copy) == [(1, "preempted"), (2, "NODE_FAIL + INTERRUPTED")]
    assert imports_infra("from outerloop import infra\n")
    assert imports_infra("from outerloop.infra import NODE_FAILED\n")
    assert not imports_infra("from outerloop import vocabulary\n")
