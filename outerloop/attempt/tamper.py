"""The tamper check: a deterministic reading of ways in-scope code can reach the measurement.

Candidate code runs inside the evaluator's process, so no sandbox stops it from
printing a better number at exit, replacing ``sys.stdout``, reading the hidden seed or
patching the evaluator. Only review can; this check is the cheap, deterministic part of
it, run before credit turns into a ready PR. It reads:

- every changed Python file **whole, as sealed**, through its AST
  (``attempt/tamper_ast.py``): names resolved to the modules they stand for, so
  ``import sys as _sys``, ``setattr`` or an ``exec``'d payload mean what they do; a
  changed ``.py`` that does not parse, a symlink, compiled code (``.pyc``, ``.so``) or a
  module shadowing the standard library is a finding by itself;
- the lines the candidate **adds** to any other file (``git diff base seal``), for the
  line patterns below;
- the candidate's eval stdout, whole (``attempt/metric_lines.py``), which must hold
  exactly one line carrying the metric (a second one is someone printing a number the
  evaluator did not compute).

Every finding is blocking: the PR opens as a draft carrying it, for a human to judge.
False positives cost a click on "ready for review"; a false negative costs the ruler.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from outerloop.attempt.metric_lines import braced_lines_in, count_carrying, count_metric_lines
from outerloop.attempt.tamper_ast import Target, analyse
from outerloop.contract import Benchmark, Contract
from outerloop.contract_scope import path_allowed
from outerloop.run.findings import TAMPER_SOURCE, Finding
from outerloop.run.paths import RunPaths
from outerloop.run.workspace import changed_paths, read_bytes_at, symlinks_in, tree_of

MAX_FINDINGS = 40
MAX_LINE_CHARS = 200

# (pattern over one added line, what it means)
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), s) for p, s in (
    (r"\batexit\b", "registers code that runs at interpreter exit (atexit), after the "
                    "evaluator printed its result"),
    (r"\bimport\s+signal\b|\bfrom\s+signal\s+import\b|\bsignal\s*\.\s*(signal|setitimer|"
     r"alarm|pthread_kill)\b", "installs a signal handler"),
    (r"\bos\s*\.\s*_exit\b", "calls os._exit (ends the process without the evaluator)"),
    (r"\bdef\s+__del__\b|\bweakref\s*\.\s*finalize\b",
     "defines a finaliser that may run after the evaluator printed its result"),
    (r"\bsys\s*\.\s*(__)?std(out|err)(__)?\s*(\.\s*\w+\s*)?=(?!=)|\bredirect_std(out|err)\b|"
     r"\bos\s*\.\s*dup2?\s*\(|\bos\s*\.\s*write\s*\(\s*[12]\b|\bsys\s*\.\s*displayhook\b",
     "replaces or writes around the process's stdout/stderr"),
    (r"\bbuiltins\b|__builtins__", "touches the builtins module (monkey-patching builtins)"),
    (r"\bsys\s*\.\s*(modules|_getframe|settrace|setprofile|addaudithook|excepthook|"
     r"meta_path|path_hooks)\b|\binspect\s*\.\s*(stack|currentframe|getouterframes)\b|"
     r"\bgc\s*\.\s*get_(objects|referrers)\b|\bimport\s+__main__\b|\bfrom\s+__main__\s+"
     r"import\b|\b__main__\s*\.",
     "reaches into the calling program (the evaluator) or the import system"),
))


@dataclass(frozen=True)
class AddedLine:
    path: str
    line: int
    text: str


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def added_lines(diff: str) -> list[AddedLine]:
    """The lines a unified diff (``git diff -U0``) adds, with their file and new line."""
    out: list[AddedLine] = []
    path = ""
    number = 0
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            name = raw[4:].strip().strip('"')
            path = "" if name == "/dev/null" else name.removeprefix("b/")
        elif raw.startswith("--- ") or raw.startswith("diff --git"):
            continue
        elif (hunk := _HUNK.match(raw)) is not None:
            number = int(hunk.group(1))
        elif raw.startswith("+") and path:
            out.append(AddedLine(path, number, raw[1:]))
            number += 1
    return out


def out_of_scope_modules(outside: Iterable[str]) -> set[str]:
    """Import names of ``outside``, the base's files the run may not write (the evaluator
    and its helpers): ``evaluate``, ``tools``, ``tools.score``, ``score``. A bare leaf
    name that is also a standard-library module (``math`` from ``utils/math.py``) is
    left out: importing it is everyday code."""
    names = _module_names(outside)
    for path in outside:
        pure = PurePosixPath(path)
        leaf = pure.parent.name if pure.stem == "__init__" else pure.stem
        if pure.suffix == ".py" and leaf and leaf not in sys.stdlib_module_names:
            names.add(leaf)
    return names


_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\b")
_IMPORT = re.compile(r"^\s*import\s+([\w., ]+)")
_DYNAMIC_IMPORT = re.compile(r"(?:import_module|__import__)\s*\(\s*['\"]([\w.]+)['\"]")
_STRING = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")

Check = Callable[[str], bool]


def _imported(line: str) -> list[str]:
    """The module names ``line`` imports (statically or through importlib)."""
    found = [m.group(1) for m in _DYNAMIC_IMPORT.finditer(line)]
    if (match := _FROM_IMPORT.match(line)) is not None:
        found.append(match.group(1))
    elif (match := _IMPORT.match(line)) is not None:
        found += [part.split()[0] for part in match.group(1).split(",") if part.split()]
    return found


def _imports_any(modules: set[str]) -> Check:
    return lambda line: any(name in modules for name in _imported(line))


def _names_file(files: set[str]) -> Check:
    """True when a string's value is one of ``files``, or ends in one
    (``"../evaluate.py"``, ``"/abs/repo/tools/score.py"``)."""
    def check(value: str) -> bool:
        parts = [p for p in value.split("/") if p not in ("", ".")]
        return any("/".join(parts[k:]) in files for k in range(len(parts)))
    return check


def _names_any(files: set[str]) -> Check:
    """True when a string literal on the line names one of ``files`` (``_names_file``)."""
    names = _names_file(files)
    return lambda line: any(names(m.group(1) or m.group(2) or "")
                            for m in _STRING.finditer(line))


def _reference_rules(benchmark: Benchmark, contract: Contract,
                     tracked: Sequence[str]) -> list[tuple[Check, str]]:
    # As a string literal: printing a JSON key needs one, while a bare word such as
    # ``loss`` is everyday code.
    metric = re.compile("([\"'])" + re.escape(benchmark.metric) + r"\1")
    rules: list[tuple[Check, str]] = [(
        lambda line: metric.search(line) is not None,
        f"names the metric {benchmark.metric!r}, which only the evaluator should print")]
    if benchmark.seed_env:
        seed = re.compile(rf"\b{re.escape(benchmark.seed_env)}\b")
        rules.append((lambda line: seed.search(line) is not None,
                      f"reads the seed variable {benchmark.seed_env}, which only the "
                      f"evaluator should read"))
    files = {p for p in tracked if not path_allowed(contract, p)}
    modules = out_of_scope_modules(files)
    if modules:
        rules.append((_imports_any(modules),
                      "imports a module outside the scope (the evaluator or its helpers)"))
    if files:
        rules.append((_names_any(files),
                      "names a file outside the scope (it may read or patch it)"))
    return rules


def _line_findings(added: Iterable[AddedLine], rules: list[tuple[Check, str]]) -> list[Finding]:
    findings: list[Finding] = []
    for line in added:
        for check, meaning in rules:
            if check(line.text):
                findings.append(_finding(line.path, line.line, meaning, line.text))
    return findings


def _finding(path: str, line: int | None, meaning: str, detail: str) -> Finding:
    return Finding(severity="blocking", file=path[:300], line=line,
                   summary=f"The candidate {meaning}."[:300],
                   detail=detail.strip()[:MAX_LINE_CHARS], source=TAMPER_SOURCE)


def _line_rules(benchmark: Benchmark, contract: Contract,
                tracked: Sequence[str]) -> list[tuple[Check, str]]:
    return [*((lambda line, p=pattern: p.search(line) is not None, meaning)
              for pattern, meaning in _RULES),
            *_reference_rules(benchmark, contract, tracked)]


def _capped(findings: list[Finding]) -> list[Finding]:
    if len(findings) > MAX_FINDINGS:
        extra = len(findings) - MAX_FINDINGS + 1
        findings = [*findings[:MAX_FINDINGS - 1], Finding(
            severity="blocking", summary=f"{extra} more tamper findings not shown.",
            source=TAMPER_SOURCE)]
    return findings


def scan_diff(diff: str, benchmark: Benchmark, contract: Contract,
              tracked: Sequence[str]) -> list[Finding]:
    """Line-scan findings for every line ``diff`` adds; ``tracked`` are the base's files.
    The review reads Python files through ``scan_candidate``; this is its fallback for
    the other files."""
    return _capped(_line_findings(added_lines(diff),
                                  _line_rules(benchmark, contract, tracked)))


PYTHON_SUFFIXES = frozenset({".py", ".pyw"})
COMPILED_SUFFIXES = frozenset({".pyc", ".pyo", ".so", ".pyd", ".dylib", ".dll", ".pth"})
"""Code Python loads that no reading of source clears: bytecode (an unchecked-hash
``.pyc`` is used whatever its ``.py`` says), native extensions, path hooks."""


@dataclass(frozen=True)
class ChangedFile:
    """A path the seal changes over the base: its bytes at the seal (None when deleted
    or not read) and, for a symlink, where it points."""

    path: str
    data: bytes | None
    link: str | None = None


def analysis_target(benchmark: Benchmark, contract: Contract, tracked: Sequence[str],
                    changed: Iterable[str]) -> Target:
    """What ``tamper_ast`` needs of the target: outside files and modules, own modules."""
    outside = {p for p in tracked if not path_allowed(contract, p)}
    own = {p for p in {*tracked, *changed} if path_allowed(contract, p)}
    return Target(metric=benchmark.metric, seed_env=benchmark.seed_env,
                  outside_modules=frozenset(out_of_scope_modules(outside)),
                  outside_files=frozenset(outside), own_modules=frozenset(_module_names(own)),
                  in_scope=lambda path: path_allowed(contract, path),
                  names_outside_file=_names_file(outside))


def _module_names(paths: Iterable[str]) -> set[str]:
    """Full dotted import names of the Python files among ``paths``, with their packages."""
    names: set[str] = set()
    for path in paths:
        pure = PurePosixPath(path)
        if pure.suffix != ".py":
            continue
        parts = list(pure.with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        names.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return names


def _file_findings(file: ChangedFile) -> list[Finding]:
    """What a changed file is, before what it says: a link, compiled code, a shadow."""
    pure = PurePosixPath(file.path)
    if pure.suffix in COMPILED_SUFFIXES:
        return [_finding(file.path, None, f"adds compiled or import-time code "
                                          f"({pure.suffix}), which the analysis cannot read",
                         "")]
    if pure.suffix not in PYTHON_SUFFIXES:
        return []
    if file.link is not None:
        return [_finding(file.path, None, "changes a Python file into a symbolic link; the "
                                          "analysis reads files, not where links point",
                         f"-> {file.link}")]
    parts = pure.with_suffix("").parts
    top = parts[0] if len(parts) == 1 or parts[1:] == ("__init__",) else None
    if top in sys.stdlib_module_names:
        return [_finding(file.path, None, f"adds a module named like the standard "
                                          f"library's {top}, which shadows it", "")]
    return []


def scan_candidate(files: Sequence[ChangedFile], diff: str, benchmark: Benchmark,
                   contract: Contract, tracked: Sequence[str]) -> list[Finding]:
    """Tamper findings for a candidate: each changed Python file analysed whole
    (``tamper_ast``), the lines ``diff`` adds to every other file line-scanned."""
    target = analysis_target(benchmark, contract, tracked, [f.path for f in files])
    findings: list[Finding] = []
    analysed: set[str] = set()
    for file in files:
        findings += _file_findings(file)
        if (PurePosixPath(file.path).suffix not in PYTHON_SUFFIXES or file.data is None
                or file.link is not None):
            continue
        analysed.add(file.path)
        findings += [_finding(file.path, hit.line, hit.meaning, hit.detail)
                     for hit in analyse(file.path, file.data, target)]
    others = [a for a in added_lines(diff) if a.path not in analysed and PurePosixPath(
        a.path).suffix not in PYTHON_SUFFIXES]
    findings += _line_findings(others, _line_rules(benchmark, contract, tracked))
    return _capped(findings)


def sealed_changes(paths: RunPaths, base: str, seal: str) -> list[ChangedFile]:
    """Every path ``seal`` changes over ``base``, Python and compiled files read at the
    seal from the kernel's repository (never from a checkout an agent could touch)."""
    changed = changed_paths(paths, base, tree_of(paths, seal))
    code = {p for p in changed if PurePosixPath(p).suffix in PYTHON_SUFFIXES}
    links = symlinks_in(paths, seal, sorted(code))
    return [ChangedFile(p, read_bytes_at(paths, seal, p) if p in code and p not in links
                        else None, links.get(p)) for p in changed]


def review_findings(paths: RunPaths, base: str, seal: str, diff: str, benchmark: Benchmark,
                    contract: Contract, tracked: Sequence[str]) -> list[Finding]:
    """``scan_candidate`` of the sealed candidate (what the review calls)."""
    return scan_candidate(sealed_changes(paths, base, seal), diff, benchmark, contract, tracked)


def metric_lines(stdout: str, metric: str) -> int:
    """How many stdout lines are JSON objects carrying ``metric`` (in either shape:
    ``{"<metric>": v}`` or ``{"metric": "<metric>", "value": v}``)."""
    return count_carrying(braced_lines_in(stdout), metric)


def check_output(stdouts: Sequence[str | Path], metric: str) -> list[Finding]:
    """One finding per candidate eval whose stdout does not hold exactly one metric line.

    Each stdout is its text, or a ``Path``: the stdout file, or the directory holding
    it (a job's log directory), read whole and streamed (``count_metric_lines``)."""
    findings = []
    for index, stdout in enumerate(stdouts):
        if isinstance(stdout, Path):
            file = stdout / "stdout" if stdout.is_dir() else stdout
            count = count_metric_lines(file, metric)
        else:
            count = metric_lines(stdout, metric)
        if count != 1:
            findings.append(Finding(
                severity="blocking",
                summary=f"The candidate's eval (seed {index + 1}) printed {count} lines "
                        f"carrying {metric!r}; the evaluator prints exactly one.",
                detail="A second metric line means code other than the evaluator printed "
                       "a number (for example at exit or from a thread); the gate read the "
                       "last one.",
                source=TAMPER_SOURCE))
    return findings
