"""Job states, verdicts and job purposes are written once (``outerloop/vocabulary.py``).

Every other module compares against the enums' members and groups, never the words: a
word spelled again somewhere is a copy that drifts (``gone`` was over for the ledger and
not for compute, with nothing saying so). The source is read with ``ast`` (a comparison
``x == "improved"``, ``state in ("completed", ...)``, or a tuple or set of the words
standing for a group) and the templates with a pattern (``v.verdict == "improved"``).
"""

from __future__ import annotations

import ast
import re
from enum import StrEnum
from pathlib import Path

from outerloop.vocabulary import LEG_PURPOSES, OVER_STATES, GateVerdict, JobPurpose, JobState

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "outerloop"
DEFINITION = PACKAGE / "vocabulary.py"
SKIPPED = ("agent_tool",)
"""The agent's tool runs with the standard library only; its ``launch`` is a verb."""
VOCABULARIES: tuple[type[StrEnum], ...] = (JobState, GateVerdict, JobPurpose)
WORDS = frozenset(m.value for vocabulary in VOCABULARIES for m in vocabulary)
NAMED = frozenset(m.value for vocabulary in (JobState, GateVerdict) for m in vocabulary)
"""The words a constant may not be named for (a purpose's word is also a folder's name:
``ARCHIVE_DIR = "archive"``)."""

ELSEWHERE: dict[tuple[str, str], str] = {
    ("settings_sections.py", "eval"): "a placement kind (kinds.JobKind, a Literal mypy checks)",
    ("doctor/benchmarks.py", "eval"): "a placement kind (kinds.JobKind)",
    ("doctor/slurm.py", "eval"): "a placement kind (kinds.JobKind)",
    ("doctor/slurm.py", "launch"): "a placement kind (kinds.JobKind)",
    ("kernel/lanes/deps.py", "failed"): "the dependency cache's state (deps.store.State)",
}
"""Another vocabulary that shares a word: (module, word) -> whose word it is. An entry no
longer met fails too (delete it)."""

TEMPLATE_COMPARISON = re.compile(
    r"""(?:==|!=|\bin)\s*\(?\s*["']([a-z_-]+)["']|["']([a-z_-]+)["']\s*(?:==|!=)""")


def _words(node: ast.expr) -> list[str]:
    """The vocabulary words ``node`` spells: a string, or a tuple, list or set of them
    (also as ``frozenset({...})``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in WORDS else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [w for element in node.elts for w in _words(element)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in ("frozenset", "set", "tuple") and len(node.args) == 1:
        return _words(node.args[0])
    return []


def spelled_in(source: str) -> list[tuple[int, str]]:
    """Where ``source`` compares with a word, names one (``IMPROVED = "improved"``) or
    spells a group of them."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    members = {id(statement) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
               and any(ast.unparse(base).endswith("Enum") for base in node.bases)
               for statement in node.body}  # another enum's members: its own words
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            substring = isinstance(node.ops[0], (ast.In, ast.NotIn)) and \
                isinstance(node.left, ast.Constant)  # "failed" in line: text, not a state
            found.extend((node.lineno, w) for o in operands[1 if substring else 0:]
                         for w in _words(o))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and all(
                isinstance(e, ast.Constant) and e.value in WORDS for e in node.elts):
            found.extend((node.lineno, str(e.value)) for e in node.elts)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and id(node) not in members \
                and isinstance(node.value, ast.Constant) and node.value.value in NAMED:
            found.append((node.lineno, str(node.value.value)))  # IMPROVED = "improved"
    return sorted(set(found))


def _modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p != DEFINITION and not set(SKIPPED) & set(p.relative_to(PACKAGE).parts)]


def _spellings() -> list[tuple[str, int, str]]:
    return [(str(p.relative_to(PACKAGE)), line, word)
            for p in _modules() for line, word in spelled_in(p.read_text())]


def test_no_module_compares_with_a_job_state_verdict_or_purpose_word_when_read() -> None:
    found = [f"outerloop/{path}:{line} spells {word!r}" for path, line, word in _spellings()
             if (path, word) not in ELSEWHERE]
    assert found == [], "compare with the members of outerloop/vocabulary.py"


def test_every_other_vocabulary_listed_still_shares_its_word_when_read() -> None:
    met = {(path, word) for path, _, word in _spellings()}
    assert sorted(set(ELSEWHERE) - met) == []


def test_no_template_compares_with_a_vocabulary_word_when_read() -> None:
    found = [f"{t.name}:{n} spells {word!r}"
             for t in sorted((PACKAGE / "templates").iterdir())
             for n, line in enumerate(t.read_text().splitlines(), 1)
             for match in TEMPLATE_COMPARISON.finditer(line)
             if (word := match.group(1) or match.group(2)) in WORDS]
    assert found == [], "give the view a property (VerdictView.credited)"


def test_the_check_finds_each_spelling_when_one_is_written() -> None:
    """The checker itself, on one of each form it must catch and one it must not."""
    source = ('if v.verdict == "improved": pass\n'
              'if job.state in ("completed", "gone"): pass\n'
              'LEGS = frozenset({"climb", "wake"})\n'
              'GONE = "gone"\n'
              'if "failed" in line: pass\n'
              'if v.verdict == GateVerdict.IMPROVED: pass\n')
    assert [w for _, w in spelled_in(source)] == ["improved", "completed", "gone", "climb",
                                                  "wake", "gone"]
    assert TEMPLATE_COMPARISON.search('{% if v.verdict == "improved" %}')


def test_a_word_a_newer_version_wrote_is_kept_when_read_back() -> None:
    """Old and newer ledgers fold: a verdict or purpose this version does not know is
    kept as written (in no group), and so is a recorded job state."""
    assert GateVerdict("confirmed") == "confirmed" and not GateVerdict("confirmed").credited
    assert JobPurpose("resident") == "resident" and JobPurpose("resident") not in LEG_PURPOSES
    kept = JobState.recorded("suspended")
    assert kept == "suspended" and kept not in OVER_STATES and not kept.active
    assert JobState.recorded("gone") is JobState.GONE and JobState.GONE in OVER_STATES
    assert not JobState.GONE.terminal
