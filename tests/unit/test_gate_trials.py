"""bench/gate_trials.py: the gate's own benchmark, in its quick mode and in small parts.

The bench runs the real gate over examples/tinysgd in process, so these tests pin what
its figures rest on: the in-process evaluation is the one the CLI prints, a re-offset
random stream is not credited more often than the run's bound (alone or fished up to
the submit limit), a gain of about 2.5 paired sd is, a gate that forgot earlier
submissions (spending its budget per submission) would be caught, and clustered noise
has its documented shape (above the bound at 3 pairs, lower at ``repeats`` 4) without
failing ``--check``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "gate_trials.py"
TINYSGD = ROOT / "examples" / "tinysgd"
GAIN_2_5_SD = {"epochs": 23}
"""About 2.5 paired sd of tinysgd's noise (the bench's calibration; tinysgd-gain.yaml)."""


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gate_trials", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


trials = _load_bench()


@pytest.fixture(scope="module")
def quick() -> dict[str, Any]:
    """``--quick --check --json``, run once in process: its exit code and figures."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = trials.main(["--quick", "--check", "--json"])
    return {"code": code, **json.loads(out.getvalue())}


def _cli_line(seed: int) -> str:
    done = subprocess.run([sys.executable, "evaluate.py"], cwd=TINYSGD, capture_output=True,
                          text=True, timeout=60, check=True,
                          env={**os.environ, "TINYSGD_SEED": str(seed),
                               "PYTHONDONTWRITEBYTECODE": "1"})
    return done.stdout.splitlines()[-1]


@pytest.mark.parametrize("seed", [3, 1_234_567])
def test_in_process_evaluate_is_what_the_cli_prints(seed: int) -> None:
    module = trials.tinysgd()
    assert _cli_line(seed) == module.result_line(module.evaluate(seed))
    assert json.loads(_cli_line(seed)) == {"test_loss": module.evaluate(seed)}


def test_quick_mode_passes_its_check(quick: dict[str, Any]) -> None:
    assert quick["code"] == 0 and quick["failed"] is False


def test_nulls_are_not_credited_significantly_above_the_bound(quick: dict[str, Any]) -> None:
    bound = quick["null_bound"]
    assert bound["runs"] == 60 and bound["bound"] == pytest.approx(0.01)
    assert bound["p_value"] >= trials.CHECK_P


def test_fishing_is_not_credited_significantly_above_the_bound(quick: dict[str, Any]) -> None:
    bound = quick["fishing_bound"]
    assert bound["runs"] == 30 and quick["submit_limit"] == 8
    assert bound["p_value"] >= trials.CHECK_P
    assert quick["fishing"]["mean_submissions"] > 7


def test_a_gain_of_two_and_a_half_sd_is_credited_in_most_trials() -> None:
    benchmark = trials.sgd_benchmark(0.99)
    runs = trials.trials(20, lambda rng: trials.one_shot(
        benchmark, trials.sgd_pairs(GAIN_2_5_SD), rng), trials.stream(5, "test-power"))
    assert sum(o.credited for o in runs) >= 16


def test_fishing_exceeds_the_bound_when_each_submission_forgets_the_earlier() -> None:
    """Confidence 0.9 makes the excess plain in few runs: each submission numbered 1 may
    spend 7% of false credit, and twenty of them far more than the run's 10%."""
    benchmark = trials.sgd_benchmark(0.9)
    runs = trials.trials(20, lambda rng: trials.fishing_run(
        benchmark, rng, 20, forget_earlier=True), trials.stream(5, "test-forget"))
    credited = sum(o.credited for o in runs)
    assert trials.binomial_tail(credited, len(runs), 0.1) < trials.CHECK_P


def test_clustered_noise_has_its_documented_shape() -> None:
    """Two basins at q 0.5, jitter 0.01: at a first look of 3 pairs, false credit per
    first submission is far above what a first submission may spend (about 1/64, three
    pairs from one cluster); a first look of 4 pairs (``repeats: 4``) brings it down."""
    benchmark = trials.sgd_benchmark(0.99)
    at = {repeats: trials.clustered_row(benchmark, 0.5, 0.01, repeats, 3000,
                                        trials.stream(5, f"test-clustered:{repeats}"))
          for repeats in (1, 4)}
    assert (at[1].first_look, at[4].first_look) == (3, 4)
    assert at[1].bound.bound == pytest.approx(0.007)
    assert at[1].bound.significantly_above
    assert at[4].counted.rate < at[1].counted.rate / 2


def test_quick_mode_reports_the_clustered_section_without_checking_it(
        quick: dict[str, Any]) -> None:
    rows = quick["clustered"]
    assert [(r["q"], r["jitter"], r["repeats"]) for r in rows] == [
        (q, jitter, repeats) for q, jitter in trials.CLUSTER_CASES
        for repeats in trials.CLUSTER_REPEATS]
    assert all(r["counted"]["runs"] == 300 and 0 <= r["counted"]["rate"] <= 1 for r in rows)
    exceeding = trials.Report(0.99, 0, [3], clustered=[
        trials.ClusterRow(0.5, 0.01, 1, 3, trials.Tally(100, 50, 3.0, {}),
                          trials.Bound(50, 100, 0.007, 0.0))])
    assert not exceeding.failed


def test_binomial_tail_is_exact_at_small_counts() -> None:
    assert trials.binomial_tail(0, 10, 0.1) == 1.0
    assert trials.binomial_tail(1, 10, 0.1) == pytest.approx(1 - 0.9**10)
    assert trials.binomial_tail(10, 10, 0.5) == pytest.approx(0.5**10)


def test_check_flags_a_count_significantly_above_the_bound_and_no_other() -> None:
    def bound(observed: int) -> Any:
        return trials.Bound(observed, 60, 0.01, trials.binomial_tail(observed, 60, 0.01))

    assert bound(5).significantly_above
    assert not bound(2).significantly_above


def test_quick_mode_replays_the_order_effect_before_and_after_couples(
        quick: dict[str, Any]) -> None:
    """Issue 47: at e = 0, 2, 5 and 10 paired sd, the gate as it is (couples) stays
    within its bound; pairs alone, their order drawn, do not at 10 sd (the hole)."""
    rows = {(row["e_sd"], row["design"]): row for row in quick["order"]["false_credit"]}
    assert set(rows) == {(e, design) for e in (0.0, 2.0, 5.0, 10.0)
                         for design in ("before", "after")}
    assert all(rows[e, "after"]["p_value"] >= trials.CHECK_P for e in (0.0, 2.0, 5.0, 10.0))
    assert rows[10.0, "before"]["p_value"] < trials.CHECK_P
    power = quick["order"]["power"]
    assert {(row["gain_sd"], row["noise"], row["design"]) for row in power} == {
        (g, noise, design) for g in (1.5, 2.5) for noise in ("timed", "seeded")
        for design in ("before", "after")}
    for row in power:  # a couple is two pair jobs
        counted = row["counted"]
        jobs = 2 if row["design"] == "after" else 1
        assert counted["mean_jobs"] == pytest.approx(jobs * counted["mean_units"])
