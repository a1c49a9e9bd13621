"""How the gate reads a metric from an eval's stdout (both shapes the reference accepts)."""

from __future__ import annotations

from decimal import Decimal

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
