"""How the gate reads a metric from an eval's stdout (both shapes the reference accepts)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from outerloop.attempt.gate import read_metric


def test_metric_is_read_when_the_line_is_keyed_by_the_metric_name() -> None:
    assert read_metric('progress\n{"loss": 0.25}\n', "loss").value == Decimal("0.25")


def test_metric_is_read_when_the_line_has_the_reference_metric_value_shape() -> None:
    out = 'step 1\n{"metric": "loss", "value": 0.125}\n'
    assert read_metric(out, "loss").value == Decimal("0.125")


def test_last_line_carrying_the_metric_wins_when_later_json_lines_carry_other_things() -> None:
    out = '{"metric": "loss", "value": 3}\n{"loss": 2}\n{"metric": "acc", "value": 9}\n{"t": 1}\n'
    assert read_metric(out, "loss").value == Decimal(2)


def test_reference_shape_for_another_metric_is_not_taken_when_the_name_differs() -> None:
    reading = read_metric('{"metric": "acc", "value": 0.9}\n', "loss")
    assert reading.value is None
    assert reading.problem is not None
    assert "no JSON line carried 'loss'" in reading.problem
    assert '{"metric": "acc", "value": 0.9}' in reading.problem


def test_error_says_what_the_last_json_line_held_when_the_key_is_misnamed() -> None:
    reading = read_metric('{"mean_len": 7.5}\nbye\n', "mean_tour_length")
    assert reading.value is None and reading.problem is not None
    assert "the last JSON line held: {\"mean_len\": 7.5}" in reading.problem


def test_error_names_both_shapes_when_stdout_has_no_json_line() -> None:
    reading = read_metric("just text\n", "loss")
    assert reading.problem is not None
    assert '{"loss": <number>}' in reading.problem
    assert '{"metric": "loss", "value": <number>}' in reading.problem


def test_non_finite_or_non_numeric_values_are_errors_in_either_shape() -> None:
    for out in ('{"loss": NaN}', '{"metric": "loss", "value": Infinity}',
                '{"metric": "loss", "value": "0.1"}', '{"loss": true}'):
        reading = read_metric(out, "loss")
        assert reading.value is None, out
        assert reading.problem is not None and "not a finite number" in reading.problem


def test_a_long_last_json_line_is_shortened_in_the_error() -> None:
    line = '{"x": "' + "a" * 5000 + '"}'
    reading = read_metric(line, "loss")
    assert reading.problem is not None and len(reading.problem) < 400


@pytest.mark.parametrize("value", ["1e999999999999", "-1e999999999999", "1e400", "1e154",
                                   "1e101", "1e-101", "1e-999999999999", "9" * 5000,
                                   "1." + "1" * 50])
def test_a_value_outside_what_the_gate_computes_on_is_refused_at_parse_naming_it(
        value: str) -> None:
    """Issue 46: ``1e999999999999`` raised ``decimal.Overflow`` in the wake that judged
    it, at every recovery. Such a value is refused as it is read, the refusal naming
    it; integers too (a 5,000-digit one passed Python's int limit as "no JSON line")."""
    from outerloop.attempt.metric_lines import MAX_DIGITS, MAX_MAGNITUDE

    for out in (f'{{"loss": {value}}}', f'{{"metric": "loss", "value": {value}}}'):
        reading = read_metric(out + "\n", "loss")
        assert reading.value is None, out
        assert reading.problem is not None and "outside what the gate computes on" in \
            reading.problem
        assert value[:10] in reading.problem  # the line, as the eval printed it
        assert str(MAX_MAGNITUDE) in reading.problem and str(MAX_DIGITS) in reading.problem
        assert len(reading.problem) < 600


@pytest.mark.parametrize(("value", "read"), [("1e100", "1E+100"), ("-1e100", "-1E+100"),
                                             ("1e-100", "1E-100"), ("-0", "0"),
                                             ("-0.000", "0.000"), ("0", "0"),
                                             ("123456789012345678901234567890", None),
                                             ("1." + "1" * 49, None)])
def test_a_value_inside_the_range_is_read_exactly_and_a_zero_loses_its_sign(
        value: str, read: str | None) -> None:
    reading = read_metric(f'{{"loss": {value}}}\n', "loss")
    assert reading.value is not None, reading.problem
    assert str(reading.value) == (read or value)


def test_the_gate_judges_every_pair_of_values_it_accepts_without_an_arithmetic_error(
        ) -> None:
    """The range's edges, against each other and an ordinary value: the judgement and
    the recorded verdict's view come out (no Overflow, no float infinity)."""
    from outerloop.attempt.gate import Side, judge, plan_for
    from outerloop.attempt.verdict_view import verdict_record, verdict_view
    from outerloop.contract import Benchmark
    from outerloop.ledger.state import RunRecord

    bench = Benchmark(name="b", command="x", metric="loss", direction="min")
    run = RunRecord(run_id="r", target="t", benchmark="b", agent="a", issue=None,
                    issue_title="", hypothesis="", queued_at="")
    edges = ["1e100", "-1e100", "1e-100", "-1e-100", "0", "7.5",
             "9." + "9" * 49 + "e99", "1.000000000000000000000000000000000000000000000001"]
    for base in edges:
        for cand in edges:
            values = [read_metric(f'{{"loss": {v}}}', "loss").value for v in (base, cand)]
            assert None not in values
            b, c = values
            pairs = [(Side(b), Side(c)), (Side(b), Side(c)), (Side(b), Side(b))]
            judged = judge(bench, pairs, plan_for(bench, 1), 0)
            seen = judged.look
            assert seen is not None and all(math.isfinite(x) for x in
                                            (seen.sd, seen.low, seen.high)), (base, cand)
            verdict_view(bench, verdict_record(bench, judged, run))
