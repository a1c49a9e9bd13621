"""A contract in the reference format's shapes passes unchanged (issue 49 point 1):
``lines: true``, ``regression`` as a mapping of allowances, ``suite: {metric,
direction}``, ``guidance: default``; each wrong value is refused naming its field, and
the shapes this project accepted earlier stay accepted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.contract import contract_errors, load_contract_text
from outerloop.contract_fields import guidance_mode_warning, ignored_field_warnings
from outerloop.contract_reference import RegressionAllowance, SuiteAggregate
from outerloop.run.render import render_brief
from tests.unit.test_render import brief_inputs

ROOT = Path(__file__).resolve().parents[2]

REFERENCE = """\
benchmarks:
  - name: tour
    command: python evaluate.py --bench tour --json
    metric: mean_tour_length
    direction: min
    lines: true
  - name: spread
    command: python evaluate.py --bench spread --json
    metric: mean_spread_length
    direction: min
    lines: false
    regression:
      free_rel: 0.01
      max_rel: 0.05
      requires_gain_rel: 0.02
budgets:
  gpu_hours_per_run: 0
  runs_per_week: 50
scope:
  allowed: [solver/]
roadmap: docs/roadmap.md
suite:
  metric: suite_score
  direction: max
guidance: default
"""

GUIDANCE_WARNING = ("guidance: 'default' is a reference guidance mode; this version quotes "
                    "contract guidance text in each brief and has no modes")


def check(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / ".outerloop.yaml"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "outerloop", "contract", "check", str(path)],
                          capture_output=True, text=True, check=False)


def test_a_contract_in_the_reference_shapes_passes_check_unchanged_with_the_guidance_warning(
        tmp_path: Path) -> None:
    done = check(tmp_path, REFERENCE)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {GUIDANCE_WARNING}")
    assert "a guard: re-measured beside every candidate (may get worse by 1% of its " \
           "baseline freely, by up to 5% of its baseline when the climbed benchmark " \
           "gains at least 2% of its own baseline)" in done.stdout
    assert "the PR reports their aggregate suite_score" in done.stdout


def test_the_committed_reference_example_passes_check_with_only_the_guidance_warning(
        tmp_path: Path) -> None:
    done = check(tmp_path, (ROOT / "contracts/examples/reference.yaml").read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("warning:")] == [
        f"warning: {guidance_mode_warning('default')}"]


def test_each_reference_field_reads_as_written_when_the_contract_validates() -> None:
    contract = load_contract_text(REFERENCE)
    tour, spread = contract.benchmarks
    assert tour.lines_on and not spread.lines_on
    assert not tour.guard and spread.guard
    assert spread.allowance == RegressionAllowance(free_rel=0.01, max_rel=0.05,
                                                   requires_gain_rel=0.02)
    assert contract.suite_aggregate == SuiteAggregate(metric="suite_score", direction="max")
    assert contract.suite_names is None  # every benchmark
    assert ignored_field_warnings(contract) == [guidance_mode_warning("default")]


def test_guidance_default_is_never_quoted_to_the_agent_as_the_maintainers_words() -> None:
    contract = load_contract_text(REFERENCE)
    assert contract.guidance_text == ""
    brief = render_brief(brief_inputs(guidance=contract.guidance_text))
    assert "## Guidance" not in brief and "\ndefault\n" not in brief


def test_guidance_text_that_is_not_a_mode_word_is_quoted_without_a_warning() -> None:
    contract = load_contract_text(REFERENCE.replace("guidance: default",
                                                    "guidance: default to local search"))
    assert contract.guidance_text == "default to local search"
    assert ignored_field_warnings(contract) == []


@pytest.mark.parametrize(("written", "read"), [
    ("max", "max"), ("maximize", "max"), ("higher", "max"),
    ("min", "min"), ("Minimize", "min"), ("lower", "min"),
])
def test_suite_direction_reads_the_reference_words_when_written(written: str,
                                                                read: str) -> None:
    contract = load_contract_text(REFERENCE.replace("direction: max", f"direction: {written}"))
    assert contract.suite_aggregate is not None
    assert contract.suite_aggregate.direction == read


@pytest.mark.parametrize(("allowance", "expected"), [
    ("{free: 1, max: 5, requires_gain: 40}",
     RegressionAllowance(free=1, max=5, requires_gain=40)),
    ("{free_rel: '2e-2'}", RegressionAllowance(free_rel=0.02)),
    ("{max: 3}", RegressionAllowance(max=3)),
    ("{}", RegressionAllowance()),
])
def test_regression_allowances_validate_when_one_family_is_consistent(
        allowance: str, expected: RegressionAllowance) -> None:
    text = REFERENCE.replace(
        "regression:\n      free_rel: 0.01\n      max_rel: 0.05\n      requires_gain_rel: 0.02",
        f"regression: {allowance}")
    bench = load_contract_text(text).benchmarks[1]
    assert bench.guard and bench.allowance == expected


def _with_regression(allowance: str) -> str:
    return REFERENCE.replace(
        "regression:\n      free_rel: 0.01\n      max_rel: 0.05\n      requires_gain_rel: 0.02",
        f"regression: {allowance}")


@pytest.mark.parametrize(("allowance", "error"), [
    ("{free_rel: -0.1, max_rel: 0.2}",
     "benchmarks[1].regression.free_rel: must be a non-negative finite number"),
    ("{max_rel: .inf}", "benchmarks[1].regression.max_rel: must be a non-negative finite number"),
    ("{free: .nan}", "benchmarks[1].regression.free: must be a non-negative finite number"),
    ("{requires_gain: lots, max: 1}",
     "benchmarks[1].regression.requires_gain: must be a non-negative finite number"),
    ("{free: true}", "benchmarks[1].regression.free: must be a non-negative finite number"),
    ("{requires_gain_rel: 0.1}", "benchmarks[1].regression: requires_gain_rel needs max_rel"),
    ("{requires_gain: 1, free: 1}", "benchmarks[1].regression: requires_gain needs max"),
    ("{free_rel: 0.2, max_rel: 0.1}",
     "benchmarks[1].regression: free_rel (0.2) is above max_rel (0.1)"),
    ("{free: 3, max: 2.5}", "benchmarks[1].regression: free (3) is above max (2.5)"),
    ("{free_rel: 0.1, max: 1}",
     "benchmarks[1].regression: mixes relative (free_rel) and absolute (max) allowances; "
     "use one family"),
    ("{slack: 1}", "benchmarks[1].regression.slack: unknown field; the allowances are "
                   "free_rel, max_rel, requires_gain_rel, free, max, requires_gain"),
    ("0.1", "benchmarks[1].regression: must be true or false (a guard), or a mapping"),
])
def test_a_wrong_regression_allowance_is_refused_naming_its_field(allowance: str,
                                                                  error: str) -> None:
    errors = contract_errors(_with_regression(allowance))
    assert len(errors) == 1 and errors[0].startswith(error), errors


@pytest.mark.parametrize(("suite", "error"), [
    ("{direction: max}", "suite.metric: required field is missing"),
    ("{metric: suite_score}", "suite.direction: required field is missing"),
    ("{metric: suite_score, direction: up}", "suite.direction: must be 'max' or 'min'"),
    ("{metric: '', direction: max}", "suite.metric: must be a name of 1 to 128 characters"),
    ("{metric: s, direction: max, weights: [1, 2]}", "suite.weights: unknown field"),
    ("3", "suite: must be a mapping {metric, direction}"),
])
def test_a_wrong_suite_mapping_is_refused_naming_its_field(suite: str, error: str) -> None:
    errors = contract_errors(REFERENCE.replace(
        "suite:\n  metric: suite_score\n  direction: max", f"suite: {suite}"))
    assert len(errors) == 1 and errors[0].startswith(error), errors


@pytest.mark.parametrize(("field", "value", "error"), [
    ("lines: true", "lines: maybe", "benchmarks[0].lines: must be true or false"),
    ("guidance: default", "guidance: {mode: default}", "guidance: must be text"),
])
def test_a_wrong_lines_or_guidance_is_refused_naming_its_field(field: str, value: str,
                                                               error: str) -> None:
    errors = contract_errors(REFERENCE.replace(field, value))
    assert len(errors) == 1 and errors[0].startswith(error), errors


@pytest.mark.parametrize(("lines", "on"), [
    ("true", True), ("false", False), ("2", True), ("0", False), ("[two-opt]", True),
    ("[]", False),
])
def test_lines_on_follows_the_written_value_in_either_shape(lines: str, on: bool) -> None:
    contract = load_contract_text(REFERENCE.replace("lines: true", f"lines: {lines}"))
    assert contract.benchmarks[0].lines_on is on


def test_a_count_of_lines_is_accepted_and_warned_as_read_on_or_off() -> None:
    contract = load_contract_text(REFERENCE.replace("lines: true", "lines: 3"))
    assert ignored_field_warnings(contract)[0] == (
        "benchmarks[0].lines: an earlier shape of lines: read as lines: true (each agent "
        "slot keeps its own research line; the count and the names are not used)")


def test_the_earlier_shapes_of_the_four_fields_stay_accepted_when_written() -> None:
    text = (REFERENCE.replace("lines: true", "lines: [two-opt, or-opt]")
            .replace("regression:\n      free_rel: 0.01\n      max_rel: 0.05\n"
                     "      requires_gain_rel: 0.02", "regression: true")
            .replace("suite:\n  metric: suite_score\n  direction: max", "suite: [tour]")
            .replace("guidance: default", "guidance: [Prefer local search., Keep it pure.]"))
    contract = load_contract_text(text)
    assert contract.benchmarks[0].lines_on and contract.benchmarks[1].guard
    assert contract.benchmarks[1].allowance is None
    assert contract.suite_names == frozenset({"tour"}) and contract.suite_aggregate is None
    assert contract.guidance_text == "Prefer local search.\n\nKeep it pure."
