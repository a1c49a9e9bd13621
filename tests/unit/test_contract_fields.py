"""No silent knobs: every contract field is honoured (and a test shows it) or warned about."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.compute.jobscript import sbatch_argv, script_path
from outerloop.config import Settings, TargetSettings
from outerloop.contract import contract_errors, load_contract_text
from outerloop.contract_fields import (
    FIELD_STATUS,
    IGNORED,
    ignored_field_warnings,
    schema_field_paths,
)
from outerloop.kernel.actions import SubmitJob
from outerloop.kernel.lanes import followup
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, PullObservation, TargetObservation
from outerloop.ledger.state import FeedbackEntry, RunRecord, State
from outerloop.run.jobs import measure_spec

ROOT = Path(__file__).resolve().parents[2]
THIS = "tests/unit/test_contract_fields.py"

LANES, RUN, EDGES = "tests/unit/test_lanes.py", "tests/e2e/test_research_run.py", \
    "tests/e2e/test_run_edges.py"
REFERENCE, CONTRACT = "tests/e2e/test_reference_target.py", "tests/unit/test_contract.py"
LIMITS, RENDER = "tests/unit/test_limits.py", "tests/unit/test_render.py"
HARNESS, TOOL = "tests/integration/test_scripted_harness.py", "tests/unit/test_syscall_tool.py"
BUDGETS, PLACEMENT = "tests/unit/test_budgets.py", "tests/unit/test_job_placement.py"
GPU_SLURM = "tests/slurm/test_gpu_compute.py"
SEQUENTIAL = "tests/unit/test_sequential.py"
SUITE = "tests/unit/test_suite_siblings.py"
ALLOWANCE, SHAPES = "tests/unit/test_suite_allowance.py", "tests/unit/test_reference_shapes.py"
WITHHELD, LEAKS = "tests/integration/test_eval_only_workspace.py", \
    "tests/security/test_eval_only_data.py"

HONOURED_BY: dict[str, tuple[str, str]] = {
    "benchmarks[].name": (LANES,
        "test_intake_claims_and_queues_when_issue_names_one_benchmark"),
    "benchmarks[].command": (RUN,
        "test_issue_becomes_merged_run_when_agent_improves_and_reviewer_merges"),
    "benchmarks[].metric": (REFERENCE,
        "test_pr_carries_only_the_in_scope_source_change_when_the_eval_prints_metric_and_value"),
    "benchmarks[].direction": (RUN,
        "test_candidate_without_gain_ends_negative_result_without_pr"),
    "benchmarks[].seed_env": (EDGES,
        "test_agent_never_sees_seed_token_or_key_when_a_run_goes_through_the_gate"),
    "benchmarks[].min_delta": (CONTRACT,
        "test_floor_is_the_absolute_delta_when_it_exceeds_the_relative_one"),
    "benchmarks[].min_delta_rel": (CONTRACT,
        "test_floor_is_exact_when_relative_to_the_baseline"),
    "benchmarks[].eval_minutes": (LIMITS,
        "test_eval_minutes_is_clamped_to_a_day_when_the_contract_asks_for_more"),
    "benchmarks[].gpus": (THIS,
        "test_eval_jobs_request_the_benchmark_gpus"),
    "benchmarks[].depth_k": (LIMITS,
        "test_benchmark_budgets_win_when_the_benchmark_sets_them"),
    "benchmarks[].sleep_k": (LIMITS,
        "test_benchmark_budgets_win_when_the_benchmark_sets_them"),
    "benchmarks[].display_digits": (RENDER,
        "test_pr_numbers_use_the_benchmark_display_digits"),
    "benchmarks[].scale": (RENDER,
        "test_pr_body_of_a_log_metric_says_the_factor"),
    "benchmarks[].repeats": (SEQUENTIAL,
        "test_looks_start_at_three_pairs_and_double_up_to_the_cap"),
    "benchmarks[].confidence": (SEQUENTIAL,
        "test_a_lower_confidence_credits_what_a_higher_one_does_not"),
    "benchmarks[].max_pairs": (SEQUENTIAL,
        "test_looks_start_at_three_pairs_and_double_up_to_the_cap"),
    "benchmarks[].score": (LEAKS,
        "test_honest_knn_agent_is_credited_by_the_trusted_scorer"),
    "benchmarks[].outputs": (LEAKS,
        "test_honest_knn_agent_is_credited_by_the_trusted_scorer"),
    "benchmarks[].eval_only": (WITHHELD,
        "test_agent_clone_holds_no_eval_only_file_or_object_when_the_contract_withholds_it"),
    "budgets.gpu_hours_per_run": (BUDGETS,
        "test_run_budget_is_the_smaller_of_the_runs_and_the_weeks_when_both_are_used"),
    "benchmarks[].nodes": (PLACEMENT,
        "test_each_job_kind_goes_where_its_section_says_when_placement_is_configured"),
    "budgets.max_concurrent_gpus": (GPU_SLURM,
        "test_gpu_array_never_holds_more_than_the_cap_when_max_concurrent_gpus_is_2"),
    "budgets.review_topup.gpu_hours": (BUDGETS,
        "test_review_topup_adds_gpu_hours_when_the_run_has_a_pull_request"),
    "budgets.usd_per_run": ("tests/unit/test_money.py",
        "test_the_week_is_the_runs_cap_times_runs_per_week_lowered_by_the_operator"),
    "budgets.runs_per_week": (LANES,
        "test_admission_starts_nothing_when_weekly_budget_is_spent"),
    "budgets.issue_width": ("tests/e2e/test_issue_width.py",
        "test_the_contracts_width_is_capped_by_the_slots_and_an_outsiders_label_ignored"),
    "budgets.max_active_attempts": (LANES,
        "test_admission_prepares_workspace_then_climb_when_budget_allows"),
    "budgets.depth_k": (LIMITS,
        "test_benchmark_budgets_fall_back_to_the_target_when_unset"),
    "budgets.sleep_k": (LIMITS,
        "test_benchmark_budgets_fall_back_to_the_target_when_unset"),
    "budgets.session_max_turns": (HARNESS,
        "test_leg_stops_at_max_turns_when_it_has_more_steps"),
    "budgets.session_minutes": (HARNESS,
        "test_session_and_its_process_group_are_killed_when_past_the_time_limit"),
    "budgets.attempt_job_minutes": (LIMITS,
        "test_session_leaves_twenty_minutes_when_the_attempt_job_is_short"),
    "budgets.followup_job_minutes": (THIS,
        "test_review_wake_job_gets_the_contract_followup_minutes"),
    "budgets.review_topup.launches": (LIMITS,
        "test_review_topup_is_cut_to_the_defaults_when_the_contract_asks_for_more"),
    "budgets.review_topup.sleeps": (LIMITS,
        "test_review_topup_is_cut_to_the_defaults_when_the_contract_asks_for_more"),
    "scope.allowed": (RUN,
        "test_edit_outside_scope_is_refused_before_anything_is_launched"),
    "scope.shared": (CONTRACT,
        "test_forbidden_wins_when_a_shared_prefix_would_allow_the_path"),
    "roadmap": (CONTRACT,
        "test_allowed_is_refused_when_it_contains_the_roadmap"),
    "channels.siblings": (REFERENCE,
        "test_an_agent_sees_its_sibling_runs_only_when_channels_siblings_is_on"),
    "channels.messages": (REFERENCE,
        "test_thread_messages_are_not_posted_when_channels_messages_is_off"),
    "channels.shared_reports": (RENDER,
        "test_brief_shows_only_the_five_newest_reports_when_given_more"),
    "channels.branches": (REFERENCE,
        "test_thread_messages_are_not_posted_when_channels_messages_is_off"),
    "benchmarks[].lines": ("tests/e2e/test_research_lines.py",
        "test_two_runs_of_a_slot_share_its_line_and_memory_but_publish_only_the_win"),
    "benchmarks[].regression": (REFERENCE,
        "test_contract_with_lines_regression_suite_and_guidance_reaches_a_pr_with_its_guard"),
    "benchmarks[].regression.free": (ALLOWANCE,
        "test_a_sibling_worse_within_free_is_credited_whatever_the_gain"),
    "benchmarks[].regression.max": (ALLOWANCE,
        "test_a_sibling_worse_beyond_max_is_not_credited_whatever_the_gain"),
    "benchmarks[].regression.requires_gain": (ALLOWANCE,
        "test_a_sibling_worse_within_max_is_not_credited_without_enough_climbed_gain"),
    "benchmarks[].regression.free_rel": (ALLOWANCE,
        "test_relative_allowances_scale_with_each_benchmarks_own_baseline"),
    "benchmarks[].regression.max_rel": (ALLOWANCE,
        "test_relative_allowances_scale_with_each_benchmarks_own_baseline"),
    "benchmarks[].regression.requires_gain_rel": (ALLOWANCE,
        "test_relative_allowances_scale_with_each_benchmarks_own_baseline"),
    "suite": (SUITE,
        "test_only_the_suite_list_is_measured_when_the_contract_names_a_suite"),
    "suite.metric": ("tests/e2e/test_suite_gate.py",
        "test_sibling_worse_within_max_is_credited_when_the_climbed_gain_meets_its_need"),
    "suite.direction": (ALLOWANCE,
        "test_the_aggregate_is_the_mean_relative_gain_in_each_benchmarks_direction"),
    "guidance": (REFERENCE,
        "test_contract_with_lines_regression_suite_and_guidance_reaches_a_pr_with_its_guard"),
    "dependencies": ("tests/e2e/test_dependency_cache.py",
        "test_benchmark_imports_its_package_from_the_warmed_cache_when_jobs_cannot_reach_the_index"),
    "dependencies.requirements": ("tests/security/test_deps_cache_tamper.py",
        "test_a_run_cannot_change_the_cache_it_is_measured_with_when_it_writes_or_relocks"),
}
"""Each honoured field -> the test that shows it working."""

EVERY_IGNORED = """
benchmarks:
  - name: tour
    command: python e.py
    metric: m
    direction: min
    baseline: cached
    min_delta: 0.1
    verification: self_report
budgets:
  gpu_hours_per_run: 1
  runs_per_week: 5
  attempt_cooldown_minutes: 0
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
merge: auto
steward: {allowed: [tests/]}
channels: {branches: false}
suite: false
"""


def test_every_schema_field_has_a_status_when_enumerated() -> None:
    assert sorted(schema_field_paths()) == sorted(FIELD_STATUS)


def test_every_honoured_field_maps_to_a_test_that_exists() -> None:
    honoured = {p for p, s in FIELD_STATUS.items() if s.status == "honoured"}
    assert sorted(honoured) == sorted(HONOURED_BY)
    for field, (path, name) in HONOURED_BY.items():
        text = (ROOT / path).read_text()
        assert re.search(rf"^def {name}\(", text, flags=re.M), f"{field}: no {path}::{name}"


def test_every_ignored_field_is_warned_about_when_a_contract_sets_it() -> None:
    warnings = ignored_field_warnings(load_contract_text(EVERY_IGNORED))
    ignored = {p for p, s in FIELD_STATUS.items() if s.status == "ignored"}
    named = {re.sub(r"\[\d+\]", "[]", line.split(":")[0]) for line in warnings}
    assert ignored - {"steward.allowed", "benchmarks[].self_report"} <= named
    assert all(IGNORED in line for line in warnings)


def test_suite_false_is_warned_as_ignored_when_a_contract_turns_the_suite_gate_off() -> None:
    warnings = ignored_field_warnings(load_contract_text(EVERY_IGNORED))
    assert any(line.startswith(f"suite: {IGNORED} (false turns nothing off") for line in warnings)


REFERENCE_VALUES = """
benchmarks:
  - {{name: tour, command: python e.py, metric: m, direction: min, lines: {lines}}}
  - {{name: speed, command: python s.py, metric: s, direction: max, regression: true}}
budgets: {{gpu_hours_per_run: 0, runs_per_week: 5}}
scope: {{allowed: [solver/]}}
roadmap: docs/roadmap.md
suite: {suite}
guidance: {guidance}
"""


@pytest.mark.parametrize(("lines", "suite", "guidance"), [
    ("3", "[tour, speed]", "'Prefer local search.'"),
    ("[two-opt, or-opt]", "true", "[Prefer local search., Keep it pure Python.]"),
    ("[{name: two-opt, agents: 2, tags: [search]}]", "[speed]", "|\n  multi\n  line"),
    ("0", "[TOUR]", "''"),
])
def test_reference_values_of_lines_regression_suite_and_guidance_validate_when_written(
        lines: str, suite: str, guidance: str) -> None:
    contract = load_contract_text(REFERENCE_VALUES.format(lines=lines, suite=suite,
                                                          guidance=guidance))
    assert contract.benchmarks[1].regression
    (warning,) = ignored_field_warnings(contract)  # lines are honoured, its count not
    assert warning.startswith("benchmarks[0].lines: an earlier shape of lines: read as "
                              f"lines: {'false' if lines == '0' else 'true'}")


@pytest.mark.parametrize(("field", "value", "error"), [
    ("lines", "-1", "benchmarks[0].lines: must be true or false (or, an earlier shape, a "
                    "number of research lines"),
    ("lines", "[[a]]", "benchmarks[0].lines: must be true or false (or, an earlier shape, "
                       "a number of research lines"),
    ("suite", "[tour, nope]", "suite[1]: 'nope' is not a benchmark of this contract; fix: "
                              "name one of tour, speed"),
    ("suite", "[tour, Tour]", "suite[1]: 'Tour' is listed twice"),
    ("suite", "[]", "suite: must be a mapping {metric, direction} (or a list of this "
                    "contract's benchmark names, or true/false)"),
    ("guidance", "{a: 1}", "guidance: must be text"),
])
def test_a_wrong_reference_value_names_its_field_when_it_does_not_validate(
        field: str, value: str, error: str) -> None:
    values = {"lines": "1", "suite": "true", "guidance": "x", field: value}
    errors = contract_errors(REFERENCE_VALUES.format(**values))
    assert len(errors) == 1 and errors[0].startswith(error), errors


def test_no_warning_when_every_field_keeps_a_value_this_version_honours() -> None:
    contract = load_contract_text((ROOT / "examples/tinytsp/.outerloop.yaml").read_text())
    assert ignored_field_warnings(contract) == []


def test_docs_table_gives_every_field_its_status() -> None:
    doc = (ROOT / "docs/contract.md").read_text()
    for field, status in FIELD_STATUS.items():
        row = re.search(rf"^\| `{re.escape(field)}` \| (\w+) \|", doc, flags=re.M)
        assert row is not None, f"docs/contract.md has no status row for {field}"
        assert row.group(1) == status.status, field


def test_contract_check_prints_the_status_of_reference_only_fields_and_exits_zero(
        tmp_path: Path) -> None:
    path = tmp_path / ".outerloop.yaml"
    path.write_text(EVERY_IGNORED)
    done = subprocess.run([sys.executable, "-m", "outerloop", "contract", "check", str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"warning: steward: {IGNORED}" in done.stdout
    assert f"warning: merge: {IGNORED}" in done.stdout
    assert f"warning: benchmarks[0].baseline: {IGNORED}" in done.stdout


def test_eval_jobs_request_the_benchmark_gpus(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    spec = measure_spec(settings, "r", "ol-r-0123456789", 5, gpus=2)
    assert spec.gpus == 2
    assert "--gpus-per-node=2" in sbatch_argv(spec, script_path(spec))


def test_review_wake_job_gets_the_contract_followup_minutes() -> None:
    from datetime import UTC, datetime

    from outerloop.forge.base import PullRequest

    contract = load_contract_text("""
benchmarks: [{name: tour, command: python e.py, metric: m, direction: min}]
budgets: {gpu_hours_per_run: 0, runs_per_week: 2, followup_job_minutes: 30}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    run = RunRecord(run_id="tour-1-agent-01", target="o/n", benchmark="tour",
                    agent="agent-01", issue=1, issue_title="i", hypothesis="h",
                    queued_at="2026-11-29T11:00:00.000000Z")
    run.state, run.park_reason, run.pr_number = "parked", "review", 7
    run.feedback = {"c1": FeedbackEntry(author="maintainer", text="why?", at=run.queued_at)}
    pr = PullRequest(number=7, title="t", body="b", author="outerloop", state="open", head="h",
                     base="main", head_sha="a" * 40, merged=False, draft=False,
                     created_at=now, updated_at=now)
    seen = TargetObservation(repo="o/n", contract=contract, default_branch="main",
                             base_sha="a" * 40, pulls={7: PullObservation(pr=pr)})
    state = State()
    state.runs[run.run_id] = run
    view = TickView(state=state, obs=Observations(now=now, targets={"o/n": seen}),
                    settings=Settings(home=Path("/nonexistent"),
                                      targets=[TargetSettings(repo="o/n")]), hold=False)
    jobs = [a for a in followup.plan(view, []) if isinstance(a, SubmitJob)]
    assert [j.spec.time_minutes for j in jobs] == [30]
