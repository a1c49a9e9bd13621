"""Clamps: a contract can only lower spend; the operator can tighten further."""

from __future__ import annotations

import pytest

from outerloop.contract import Contract, load_contract_text
from outerloop.errors import ConfigError
from outerloop.limits import (
    ATTEMPT_COOLDOWN_MINUTES,
    EVAL_MINUTES_CEILING,
    OperatorCeilings,
    effective_limits,
)

BASE = """\
benchmarks:
  - name: tsp
    command: python eval.py
    metric: score
    direction: max
{bench}
budgets:
  gpu_hours_per_run: 4
  runs_per_week: 10
{budgets}
scope:
  allowed: [src/]
roadmap: docs/roadmap.md
"""


def _contract(budgets: str = "", bench: str = "") -> Contract:
    return load_contract_text(BASE.format(budgets=budgets, bench=bench))


def test_code_defaults_apply_when_the_contract_sets_no_knobs() -> None:
    limits = effective_limits(_contract())
    assert (limits.session_max_turns, limits.session_minutes) == (120, 90)
    assert (limits.attempt_job_minutes, limits.followup_job_minutes) == (120, 90)
    assert limits.attempt_cooldown_minutes == ATTEMPT_COOLDOWN_MINUTES


@pytest.mark.parametrize(("knob", "wish", "expected"), [
    ("session_max_turns", 500, 120), ("session_max_turns", 2, 10),
    ("session_max_turns", 50, 50),
    ("attempt_job_minutes", 999, 120), ("attempt_job_minutes", 5, 40),
    ("followup_job_minutes", 999, 90), ("followup_job_minutes", 1, 20),
    ("followup_job_minutes", 45, 45),
])
def test_knob_is_clamped_into_its_range_when_the_contract_asks(knob: str, wish: int,
                                                                expected: int) -> None:
    limits = effective_limits(_contract(f"  {knob}: {wish}"))
    assert getattr(limits, knob) == expected


@pytest.mark.parametrize(("wish", "expected"), [(999, 90), (1, 10), (30, 30)])
def test_session_minutes_is_clamped_when_the_contract_asks(wish: int, expected: int) -> None:
    assert effective_limits(_contract(f"  session_minutes: {wish}")).session_minutes == expected


def test_session_leaves_twenty_minutes_when_the_attempt_job_is_short() -> None:
    limits = effective_limits(_contract("  attempt_job_minutes: 50\n  session_minutes: 90"))
    assert limits.attempt_job_minutes == 50
    assert limits.session_minutes == 30


def test_session_is_at_most_twenty_below_the_job_when_the_job_is_at_its_floor() -> None:
    limits = effective_limits(_contract("  attempt_job_minutes: 1"))
    assert (limits.attempt_job_minutes, limits.session_minutes) == (40, 20)


def test_eval_minutes_is_clamped_to_a_day_when_the_contract_asks_for_more() -> None:
    limits = effective_limits(_contract(bench="    eval_minutes: 100000"))
    assert limits.for_benchmark("tsp").eval_minutes == EVAL_MINUTES_CEILING


def test_cooldown_can_only_grow_when_the_contract_sets_it() -> None:
    assert effective_limits(_contract("  attempt_cooldown_minutes: 5")
                            ).attempt_cooldown_minutes == ATTEMPT_COOLDOWN_MINUTES
    assert effective_limits(_contract("  attempt_cooldown_minutes: 1000")
                            ).attempt_cooldown_minutes == 1000


def test_review_topup_is_cut_to_the_defaults_when_the_contract_asks_for_more() -> None:
    limits = effective_limits(_contract(
        "  review_topup: {launches: 50, sleeps: 50, gpu_hours: 9}"))
    assert (limits.review_topup_launches, limits.review_topup_sleeps) == (2, 4)
    assert limits.review_topup_gpu_hours == 0.5


def test_operator_ceiling_tightens_when_lower_than_the_contract() -> None:
    limits = effective_limits(_contract("  session_max_turns: 100\n  max_active_attempts: 5"),
                              OperatorCeilings(session_max_turns=30, max_active_attempts=2))
    assert limits.session_max_turns == 30
    assert limits.max_active_attempts == 2


def test_operator_ceiling_stops_at_the_floor_when_set_below_it() -> None:
    limits = effective_limits(_contract(), {"session_max_turns": 1, "attempt_job_minutes": 5})
    assert limits.session_max_turns == 10
    assert limits.attempt_job_minutes == 40


def test_operator_ceiling_never_raises_when_above_the_code_default() -> None:
    limits = effective_limits(_contract(), OperatorCeilings(session_minutes=500,
                                                            gpu_hours_per_run=100))
    assert limits.session_minutes == 90
    assert limits.gpu_hours_per_run == 4


def test_operator_gpu_cap_applies_when_the_contract_sets_none() -> None:
    assert effective_limits(_contract()).max_concurrent_gpus is None
    limits = effective_limits(_contract(), OperatorCeilings(max_concurrent_gpus=3))
    assert limits.max_concurrent_gpus == 3


def test_unknown_operator_limit_is_refused_when_given_as_a_mapping() -> None:
    with pytest.raises(ConfigError, match="unknown operator limit"):
        effective_limits(_contract(), {"session_hours": 3})


def test_negative_operator_limit_is_refused_when_constructed() -> None:
    with pytest.raises(ConfigError, match="non-negative"):
        OperatorCeilings(session_minutes=-1)


def test_benchmark_budgets_fall_back_to_the_target_when_unset() -> None:
    limits = effective_limits(_contract("  depth_k: 4\n  sleep_k: 6"))
    bench = limits.for_benchmark("tsp")
    assert (bench.depth_k, bench.sleep_k) == (4, 6)


def test_benchmark_budgets_win_when_the_benchmark_sets_them() -> None:
    limits = effective_limits(_contract("  depth_k: 4", bench="    depth_k: 2\n    sleep_k: 3"))
    bench = limits.for_benchmark("tsp")
    assert (bench.depth_k, bench.sleep_k) == (2, 3)


def test_effective_limits_are_immutable_when_returned() -> None:
    limits = effective_limits(_contract())
    with pytest.raises(AttributeError):
        limits.session_minutes = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        limits.benchmarks["x"] = limits.for_benchmark("tsp")  # type: ignore[index]


def _calls(name: str) -> list[str]:
    """Where the package calls ``name`` (module path : line), read with ``ast``."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "outerloop"
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if called == name:
                    found.append(f"{path.relative_to(package)}:{node.lineno}")
    return found


def test_a_targets_limits_are_computed_in_one_place_when_the_package_is_scanned() -> None:
    """Every caller takes a target's limits from ``target_limits``; only ``contract
    check`` (no home, so no operator ceilings) clamps a contract alone."""
    assert sorted({c.split(":")[0] for c in _calls("effective_limits")}) == [
        "cli/contract_cmd.py", "limits.py"]
    assert {c.split(":")[0] for c in _calls("OperatorCeilings")} == {"limits.py"}
