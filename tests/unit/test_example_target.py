"""The demo's target, examples/tinytsp: a fast stdlib benchmark that 2-opt clearly beats.

The demo and the end-to-end tests rely on these facts: the contract validates, the
evaluator's last stdout line is the JSON result, the scripted 2-opt change improves the
metric well past the 0.5% credit threshold whatever the seed, and the no-op change
leaves it exactly unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from outerloop.contract import load_contract_file
from outerloop.contract_scope import scope_violations
from outerloop.harness.scripted import Script, load_script

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "examples" / "tinytsp"
AGENTS = ROOT / "examples" / "agents"
# Well past the gate's 0.5% credit threshold, so the demo never hinges on noise.
CLEAR_IMPROVEMENT_REL = Decimal("0.02")
METRICS = {"tour": "mean_tour_length", "spread": "mean_spread_length"}


def copy_target(dest: Path) -> Path:
    tree = dest / "tinytsp"
    shutil.copytree(TARGET, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tree


def script(name: str) -> Script:
    return load_script(AGENTS / name)


def apply_first_leg_edits(tree: Path, name: str) -> None:
    """Play the first leg's ``write`` and ``shell`` steps (not syscalls) in ``tree``."""
    for step in script(name).legs[0]:
        if step.write is not None and step.write.path != "report.md":
            (tree / step.write.path).write_text(step.write.content, encoding="utf-8")
        elif step.shell is not None and "evaluate.py --bench" not in step.shell:
            subprocess.run(["bash", "-c", step.shell], cwd=tree, check=True)


def evaluate(tree: Path, bench: str, seed: int) -> tuple[Decimal, list[str]]:
    env = {**os.environ, "TINYTSP_SEED": str(seed), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "evaluate.py", "--bench", bench, "--json"],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    lines = done.stdout.splitlines()
    result = json.loads(lines[-1], parse_float=Decimal)
    return result[METRICS[bench]], lines


@pytest.fixture(scope="module")
def baseline_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_target(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def two_opt_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = copy_target(tmp_path_factory.mktemp("two-opt"))
    apply_first_leg_edits(tree, "tinytsp-2opt.yaml")
    return tree


def test_contract_validates_with_two_benchmarks_and_solver_scope() -> None:
    contract = load_contract_file(TARGET / ".outerloop.yaml")
    assert [(b.name, b.metric, b.direction) for b in contract.benchmarks] == [
        ("tour", "mean_tour_length", "min"), ("spread", "mean_spread_length", "min")]
    assert all(b.seed_env == "TINYTSP_SEED" for b in contract.benchmarks)
    assert contract.scope.allowed == ["solver/"]
    assert (TARGET / contract.roadmap).is_file()


@pytest.mark.parametrize("bench", ["tour", "spread"])
def test_last_stdout_line_is_json_with_the_metric_after_progress_lines(
        baseline_tree: Path, bench: str) -> None:
    value, lines = evaluate(baseline_tree, bench, 1)
    assert len(lines) >= 2 and not lines[0].startswith("{")
    assert value > 0


def test_same_seed_gives_the_same_metric_and_another_seed_differs(baseline_tree: Path) -> None:
    assert evaluate(baseline_tree, "tour", 5)[0] == evaluate(baseline_tree, "tour", 5)[0]
    assert evaluate(baseline_tree, "tour", 5)[0] != evaluate(baseline_tree, "tour", 6)[0]


@pytest.mark.parametrize("bench", ["tour", "spread"])
@pytest.mark.parametrize("seed", [1, 7, 42])
def test_two_opt_improves_by_more_than_half_a_percent_for_any_seed(
        baseline_tree: Path, two_opt_tree: Path, bench: str, seed: int) -> None:
    base, _ = evaluate(baseline_tree, bench, seed)
    cand, _ = evaluate(two_opt_tree, bench, seed)
    assert (base - cand) / base > CLEAR_IMPROVEMENT_REL


def test_noop_change_leaves_the_metric_identical(tmp_path: Path, baseline_tree: Path) -> None:
    tree = copy_target(tmp_path)
    apply_first_leg_edits(tree, "tinytsp-noop.yaml")
    assert (tree / "solver" / "tour.py").read_text() != (
        baseline_tree / "solver" / "tour.py").read_text()
    assert evaluate(tree, "tour", 42)[0] == evaluate(baseline_tree, "tour", 42)[0]


def test_outside_scope_script_changes_only_a_path_outside_scope(tmp_path: Path) -> None:
    tree = copy_target(tmp_path)
    apply_first_leg_edits(tree, "tinytsp-outside-scope.yaml")
    changed = [p for p in ["evaluate.py", "solver/tour.py", "solver/__init__.py"]
               if (tree / p).read_bytes() != (TARGET / p).read_bytes()]
    contract = load_contract_file(TARGET / ".outerloop.yaml")
    assert changed == ["evaluate.py"]
    assert scope_violations(contract, changed) == ["evaluate.py"]


def test_evaluator_refuses_a_tour_that_skips_points(tmp_path: Path) -> None:
    tree = copy_target(tmp_path)
    (tree / "solver" / "tour.py").write_text(
        "def solve(points):\n    return list(range(len(points) - 1))\n")
    done = subprocess.run([sys.executable, "evaluate.py", "--json"], cwd=tree,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode != 0 and "permutation" in done.stderr


def test_agent_scripts_follow_the_scripted_format() -> None:
    two_opt = script("tinytsp-2opt.yaml")
    assert len(two_opt.legs) == 3
    syscalls = [step.syscall for leg in two_opt.legs for step in leg if step.syscall]
    assert syscalls[0].startswith("launch --name try-2opt --minutes 5 --array 2 "
                                  "--concurrency 1 --why ")
    assert syscalls[0].endswith("-- python evaluate.py --bench tour --json")
    assert [s for s in syscalls if not s.startswith(("launch", "message"))] == [
        "sleep", "submit --report report.md", "sleep", "sleep"]
    assert two_opt.legs[1][0].expect == "try-2opt"
    assert two_opt.legs[2][-2].syscall is not None
    assert two_opt.legs[2][-2].syscall.startswith("message --to thread ")
    assert script("tinytsp-noop.yaml").legs[-1][-1].syscall == "stop --report report.md"
    assert script("tinytsp-outside-scope.yaml").legs[-1][-1].syscall == "stop --report report.md"


def test_scratch_report_is_ignored_by_the_target() -> None:
    ignored = (TARGET / ".gitignore").read_text().splitlines()
    assert "/report.md" in ignored and "__pycache__/" in ignored
