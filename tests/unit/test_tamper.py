"""The tamper check: every way in-scope code can reach the measurement is found in the
lines a candidate adds, and an eval that prints more than one metric line is caught."""

from __future__ import annotations

import pytest

from outerloop.attempt.tamper import added_lines, check_output, metric_lines, scan_diff
from outerloop.contract import Benchmark, Contract, load_contract_text

CONTRACT: Contract = load_contract_text("""
benchmarks:
  - {name: tour, command: python evaluate.py --json, metric: mean_tour_length,
     direction: min, seed_env: TINYTSP_SEED}
budgets: {gpu_hours_per_run: 0, runs_per_week: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")
BENCH: Benchmark = CONTRACT.benchmarks[0]
TRACKED = ["evaluate.py", "tools/score.py", "tools/math.py", "solver/__init__.py", "solver/tour.py",
           "docs/roadmap.md", "README.md"]


def diff_adding(*lines: str, path: str = "solver/tour.py", start: int = 10) -> str:
    body = "\n".join(f"+{line}" for line in lines)
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -9,0 +{start},{len(lines)} @@\n{body}\n")


def found(*lines: str) -> list[str]:
    return [f.summary for f in scan_diff(diff_adding(*lines), BENCH, CONTRACT, TRACKED)]


# (what, added line)
TAMPERING = [
    ("atexit-import", "import atexit"),
    ("atexit-register", "atexit.register(lambda: print(1))"),
    ("signal-import", "import signal"),
    ("signal-handler", "signal.signal(15, handler)"),
    ("signal-from", "from signal import SIGTERM"),
    ("os-exit", "os._exit(0)"),
    ("finaliser", "    def __del__(self):"),
    ("weakref-finalize", "weakref.finalize(obj, report)"),
    ("stdout-replaced", "sys.stdout = io.StringIO()"),
    ("stdout-write-patched", "sys.stdout.write = fake_write"),
    ("dunder-stdout", "sys.__stdout__ = x"),
    ("redirect", "with contextlib.redirect_stdout(buf):"),
    ("fd-write", "os.write(1, b'{}')"),
    ("dup2", "os.dup2(fd, 1)"),
    ("builtins", "import builtins"),
    ("builtins-patch", "builtins.print = quiet"),
    ("dunder-builtins", "__builtins__['sum'] = mysum"),
    ("seed-variable", "seed = int(os.environ['TINYTSP_SEED'])"),
    ("seed-getenv", "os.getenv('TINYTSP_SEED')"),
    ("metric-name", "print(json.dumps({'mean_tour_length': 0.1}))"),
    ("metric-name-double-quoted", 'key = "mean_tour_length"'),
    ("import-evaluator", "import evaluate"),
    ("from-evaluator", "from evaluate import tour_length"),
    ("import-helper", "from tools.score import check"),
    ("import-helper-leaf", "import tools.score as s"),
    ("import-module", "importlib.import_module('evaluate')"),
    ("file-outside-scope", "open('evaluate.py').read()"),
    ("file-outside-scope-path", "Path(__file__).parent.parent / 'tools/score.py'"),
    ("file-outside-scope-relative", 'open("../evaluate.py")'),
    ("import-package", "import tools"),
    ("import-several", "import os, evaluate as ev"),
    ("dunder-import", "__import__('tools.score')"),
    ("sys-modules", "sys.modules['evaluate'].tour_length = lambda p, t: 0"),
    ("caller-frame", "frame = sys._getframe(2)"),
    ("inspect-stack", "inspect.stack()[1].frame.f_globals"),
    ("main-module", "import __main__"),
    ("main-module-attribute", "__main__.tour_length = short"),
    ("trace-hook", "sys.settrace(tracer)"),
    ("gc-objects", "for o in gc.get_objects():"),
]


@pytest.mark.parametrize("line", [t[1] for t in TAMPERING], ids=[t[0] for t in TAMPERING])
def test_tamper_check_finds_the_pattern_when_a_candidate_adds_it(line: str) -> None:
    findings = scan_diff(diff_adding("x = 1", line), BENCH, CONTRACT, TRACKED)
    assert findings, line
    (finding, *_) = findings
    assert finding.blocking and finding.file == "solver/tour.py" and finding.line == 11
    assert finding.source == "tamper check" and line.strip() in finding.detail


CLEAN = [
    "import math",
    "from solver.util import helper",
    "def solve(points):",
    "    return two_opt(points, nearest_neighbour(points))",
    "dist = [[math.dist(p, q) for q in points] for p in points]",
    "# evaluate candidates by their length",
    "print('tour done', file=sys.stderr)",
    "signals = []",
    "seed = 3",
    "import evaluation_helpers_in_scope",
    "import math  # tools/math.py is outside scope, but this is the standard library",
    "open('solver/tour.py')",
    "name = 'evaluated.py'",
    'if __name__ == "__main__":',
    "mean_tour_length = sum(lengths) / len(lengths)",
]


@pytest.mark.parametrize("line", CLEAN)
def test_tamper_check_stays_quiet_when_a_line_is_ordinary_solver_code(line: str) -> None:
    assert found(line) == []


def test_tamper_check_reads_only_added_lines_when_a_diff_removes_some() -> None:
    diff = ("diff --git a/solver/tour.py b/solver/tour.py\n--- a/solver/tour.py\n"
            "+++ b/solver/tour.py\n@@ -3 +2,0 @@\n-import atexit\n"
            "@@ -20,0 +20,2 @@\n+import math\n+atexit.register(f)\n")
    findings = scan_diff(diff, BENCH, CONTRACT, TRACKED)
    assert [(f.file, f.line) for f in findings] == [("solver/tour.py", 21)]


def test_added_lines_follow_each_file_and_hunk_of_the_diff() -> None:
    diff = diff_adding("a", "b", path="solver/x.py", start=5) + diff_adding(
        "c", path="solver/y.py", start=1)
    assert [(a.path, a.line, a.text) for a in added_lines(diff)] == [
        ("solver/x.py", 5, "a"), ("solver/x.py", 6, "b"), ("solver/y.py", 1, "c")]


def test_tamper_findings_are_capped_when_a_diff_repeats_a_pattern() -> None:
    findings = scan_diff(diff_adding(*["import atexit"] * 100), BENCH, CONTRACT, TRACKED)
    assert len(findings) == 40
    assert "61 more" in findings[-1].summary


# (what, stdout, metric lines)
OUTPUTS = [
    ("one-line", 'tinytsp\n{"mean_tour_length": 6.5, "instances": 25}\n', 1),
    ("reference-shape", '{"metric": "mean_tour_length", "value": 6.5}\n', 1),
    ("fake-at-exit", '{"mean_tour_length": 6.5}\n{"mean_tour_length": 0.1}\n', 2),
    ("none", "solved\n", 0),
    ("other-metric", '{"other": 1}\n', 0),
    ("not-an-object", '["mean_tour_length"]\n', 0),
]


@pytest.mark.parametrize(("stdout", "count"), [o[1:] for o in OUTPUTS],
                         ids=[o[0] for o in OUTPUTS])
def test_metric_lines_counts_json_lines_carrying_the_metric(stdout: str, count: int) -> None:
    assert metric_lines(stdout, "mean_tour_length") == count


def test_output_check_flags_each_candidate_eval_without_exactly_one_metric_line() -> None:
    ok = '{"mean_tour_length": 6.5}\n'
    twice = ok + '{"mean_tour_length": 0.1}\n'
    findings = check_output([ok, twice, "nothing"], "mean_tour_length")
    assert len(findings) == 2 and all(f.blocking for f in findings)
    assert "seed 2" in findings[0].summary and "2 lines" in findings[0].summary
    assert "seed 3" in findings[1].summary and "0 lines" in findings[1].summary
