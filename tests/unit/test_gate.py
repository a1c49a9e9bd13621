"""The gate's decision at its edges: every rule as a table of cases.

Each case names the rule it pins, so a mutation of that rule (dropping the 0.5%
threshold, the floors, the inclusive boundary, the exit-code check, last-line reading)
fails a case whose id says which rule broke. The sequential test's own rules (looks,
spending, zero spread) are pinned in test_sequential.py.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from outerloop.attempt.gate import (
    Side,
    judge,
    measure,
    read_metric,
)
from outerloop.contract import Benchmark
from outerloop.vocabulary import GateVerdict

IMP, NO, EVAL_ERROR = GateVerdict.IMPROVED, GateVerdict.NO_IMPROVEMENT, GateVerdict.EVAL_ERROR


def bench(direction: str = "min", **fields: object) -> Benchmark:
    return Benchmark.model_validate({"name": "b", "command": "python e.py", "metric": "m",
                                     "direction": direction, **fields})


def pairs(*values: tuple[str, str]) -> list[tuple[Side, Side]]:
    return [(Side(Decimal(b)), Side(Decimal(c))) for b, c in values]


SPREAD = Decimal("0.000001")


def sure(baseline: str, candidate: str) -> list[tuple[Side, Side]]:
    """Three pairs whose mean is exactly (baseline, candidate) and whose noise is so
    small that the sequential test is sure: the case is decided by the thresholds."""
    b, c = Decimal(baseline), Decimal(candidate)
    return [(Side(b), Side(c - SPREAD)), (Side(b), Side(c)), (Side(b), Side(c + SPREAD))]


# (rule, direction, contract floors, (baseline, candidate) of sure pairs, expected verdict)
DECISIONS: list[tuple[str, str, dict[str, object], tuple[str, str], str]] = [
    # the relative threshold on the mean gain: 0.5% of |baseline|
    ("rel-threshold-below", "min", {}, ("100", "99.9"), NO),
    ("rel-threshold-just-below", "min", {}, ("100", "99.51"), NO),
    ("rel-threshold-clear", "min", {}, ("100", "99"), IMP),
    ("rel-threshold-max-below", "max", {}, ("100", "100.4"), NO),
    ("rel-threshold-max-clear", "max", {}, ("100", "101"), IMP),
    # the inclusive boundary of the 0.5%: a mean gain of exactly 0.5% is credited
    ("inclusive-rel-boundary-min", "min", {}, ("100", "99.5"), IMP),
    ("inclusive-rel-boundary-max", "max", {}, ("200", "201"), IMP),
    # the floor must be cleared with the confidence: a mean exactly at it is not enough
    ("floor-boundary-not-enough", "min", {"min_delta": 2.0}, ("100", "98"), NO),
    ("rel-floor-boundary-not-enough", "max", {"min_delta_rel": 0.03}, ("100", "103"), NO),
    ("floor-cleared-surely", "min", {"min_delta": 2.0}, ("100", "97.99"), IMP),
    # the absolute floor min_delta
    ("abs-floor-blocks", "min", {"min_delta": 2.0}, ("100", "99"), NO),
    ("abs-floor-blocks-max", "max", {"min_delta": 0.5}, ("10", "10.4"), NO),
    ("abs-floor-cleared", "min", {"min_delta": 2.0}, ("100", "97.5"), IMP),
    # the relative floor min_delta_rel x |baseline|
    ("rel-floor-blocks", "min", {"min_delta_rel": 0.02}, ("100", "99"), NO),
    ("rel-floor-cleared", "min", {"min_delta_rel": 0.02}, ("100", "97.9"), IMP),
    ("floors-take-the-larger", "min", {"min_delta": 1.0, "min_delta_rel": 0.02},
     ("100", "98.5"), NO),
    ("floors-take-the-larger-abs", "min", {"min_delta": 3.0, "min_delta_rel": 0.02},
     ("100", "97.5"), NO),
    # a zero baseline: the 0.5% becomes an absolute 0.005
    ("zero-baseline-below", "max", {}, ("0", "0.004"), NO),
    ("zero-baseline-boundary", "max", {}, ("0", "0.005"), IMP),
    ("zero-baseline-min", "min", {}, ("0", "-0.01"), IMP),
    # negative baselines use |baseline|
    ("negative-baseline-boundary", "max", {}, ("-100", "-99.5"), IMP),
    ("negative-baseline-below", "max", {}, ("-100", "-99.6"), NO),
    # direction: the same numbers flip
    ("wrong-direction-min", "min", {}, ("100", "101"), NO),
    ("wrong-direction-max", "max", {}, ("100", "99"), NO),
    ("equal-is-not-better", "min", {}, ("100", "100"), NO),
]


@pytest.mark.parametrize(("direction", "floors", "values", "expected"),
                         [case[1:] for case in DECISIONS], ids=[c[0] for c in DECISIONS])
def test_gate_decides_as_the_rule_says_when_values_sit_at_the_edge(
        direction: str, floors: dict[str, object], values: tuple[str, str],
        expected: str) -> None:
    judged = judge(bench(direction, **floors), sure(*values))
    assert judged.verdict == expected, judged.detail


def test_gate_compares_exact_decimals_when_floats_would_round() -> None:
    # 0.1 + 0.2 != 0.3 in binary; the 0.5% boundary must still be inclusive.
    judged = judge(bench("max"), sure("60", "60.3"))
    assert judged.verdict == IMP, judged.detail
    assert judged.delta == Decimal("0.3")


def test_gate_reports_the_mean_of_the_pairs() -> None:
    judged = judge(bench("min"), pairs(("100", "98"), ("102", "99"), ("101", "98.5")))
    assert (judged.baseline, judged.candidate, judged.delta) == (
        Decimal("101"), Decimal("98.5"), Decimal("2.5"))


def test_gate_gives_eval_error_when_either_side_of_any_pair_failed() -> None:
    good = Side(Decimal("100"))
    for broken in [[(Side(None, "boom"), Side(Decimal("90")))],
                   [(good, Side(None, "boom"))],
                   [(good, Side(Decimal("90"))), (good, Side(None, "timeout"))]]:
        assert judge(bench(), broken).verdict == EVAL_ERROR


def test_gate_gives_eval_error_when_nothing_was_measured() -> None:
    assert judge(bench(), []).verdict == EVAL_ERROR


# ------------------------------------------------------------------ reading one eval job


def eval_dir(tmp_path: Path, stdout: str, exit_code: int | None = 0) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "stdout").write_text(stdout)
    if exit_code is not None:
        (tmp_path / "exit_code").write_text(f"{exit_code}\n")
    return tmp_path


# (rule, stdout, job state, exit code, expected value or None for an error)
MEASUREMENTS: list[tuple[str, str, str, int | None, str | None]] = [
    ("plain", 'progress\n{"m": 1.5}\n', "completed", 0, "1.5"),
    ("last-json-line-wins", '{"m": 9}\n{"m": 2}\n', "completed", 0, "2"),
    ("last-json-line-wins-after-noise", '{"m": 9}\nnoise\n{"m": 2}\ntrailing text\n',
     "completed", 0, "2"),
    ("last-line-without-metric-is-skipped", '{"m": 3}\n{"other": 1}\n', "completed", 0, "3"),
    ("integer-metric", '{"m": 7}\n', "completed", 0, "7"),
    ("exact-decimal", '{"m": 0.30000000000000004}\n', "completed", 0,
     "0.30000000000000004"),
    ("non-zero-exit", '{"m": 1.5}\n', "completed", 3, None),
    ("non-zero-exit-failed-state", '{"m": 1.5}\n', "failed", 1, None),
    ("timeout", '{"m": 1.5}\n', "timeout", None, None),
    ("cancelled", '{"m": 1.5}\n', "cancelled", None, None),
    ("nan", '{"m": NaN}\n', "completed", 0, None),
    ("infinity", '{"m": Infinity}\n', "completed", 0, None),
    ("negative-infinity", '{"m": -Infinity}\n', "completed", 0, None),
    ("nan-last-hides-earlier-number", '{"m": 1}\n{"m": NaN}\n', "completed", 0, None),
    ("string-value", '{"m": "1.5"}\n', "completed", 0, None),
    ("boolean-value", '{"m": true}\n', "completed", 0, None),
    ("null-value", '{"m": null}\n', "completed", 0, None),
    ("missing", 'done\n{"other": 1}\n', "completed", 0, None),
    ("empty", "", "completed", 0, None),
    # both metric shapes: {"<metric>": v} and the reference's {"metric": name, "value": v}
    ("reference-shape", '{"metric": "m", "value": 1.5}\n', "completed", 0, "1.5"),
    ("reference-shape-last-wins", '{"metric": "m", "value": 9}\n{"m": 2}\n', "completed",
     0, "2"),
    ("plain-shape-last-wins", '{"m": 9}\n{"metric": "m", "value": 2}\n', "completed", 0,
     "2"),
    ("reference-shape-other-metric", '{"metric": "other", "value": 2}\n', "completed", 0,
     None),
    ("reference-shape-without-value", '{"metric": "m"}\n', "completed", 0, None),
    ("reference-shape-nan", '{"metric": "m", "value": NaN}\n', "completed", 0, None),
    ("reference-shape-string", '{"metric": "m", "value": "2"}\n', "completed", 0, None),
    ("reference-shape-non-zero-exit", '{"metric": "m", "value": 2}\n', "completed", 1, None),
]


@pytest.mark.parametrize(("stdout", "state", "code", "expected"),
                         [case[1:] for case in MEASUREMENTS], ids=[c[0] for c in MEASUREMENTS])
def test_eval_side_is_a_number_only_when_the_job_ended_clean(
        tmp_path: Path, stdout: str, state: str, code: int | None,
        expected: str | None) -> None:
    side = measure(eval_dir(tmp_path, stdout, code), state, "m")
    if expected is None:
        assert side.value is None and side.error
    else:
        assert side == Side(Decimal(expected))


def test_metric_is_read_from_the_last_json_line_when_several_carry_it() -> None:
    assert read_metric('{"m": 1}\n{"m": 2}\n{"m": 3}', "m").value == Decimal(3)
