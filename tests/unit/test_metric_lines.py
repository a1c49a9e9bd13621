"""Metric lines are read over the whole stdout file, streamed: the gate takes the last one
and the output check counts them however much a candidate printed before or between."""

from __future__ import annotations

import tracemalloc
from decimal import Decimal
from pathlib import Path

from outerloop.attempt import metric_lines
from outerloop.attempt.gate import measure, read_metric_file
from outerloop.attempt.metric_lines import (
    CHUNK_BYTES,
    MAX_METRIC_LINE_BYTES,
    braced_lines,
    count_metric_lines,
)
from outerloop.attempt.tamper import check_output

METRIC = "mean_tour_length"
REAL = '{"mean_tour_length": 7.5, "instances": 25}\n'
FAKE = '{"mean_tour_length": 5.0}\n'
FILLER = "." * 1023 + "\n"


def stdout_file(tmp_path: Path, *parts: str) -> Path:
    path = tmp_path / "stdout"
    path.write_text("".join(parts))
    return path


def test_a_fake_line_after_a_mebibyte_of_filler_is_counted_with_the_real_one(
        tmp_path: Path) -> None:
    path = stdout_file(tmp_path, "tinytsp\n", REAL, FILLER * 1100, FAKE)
    assert path.stat().st_size > 1024 * 1024
    assert count_metric_lines(path, METRIC) == 2


def test_the_gate_reads_the_last_metric_line_when_it_follows_a_mebibyte_of_filler(
        tmp_path: Path) -> None:
    path = stdout_file(tmp_path, REAL, FILLER * 1100, FAKE)
    assert read_metric_file(path, METRIC).value == Decimal("5.0")
    (tmp_path / "exit_code").write_text("0\n")
    assert measure(tmp_path, "completed", METRIC).value == Decimal("5.0")


def test_the_gate_reads_a_real_line_printed_before_a_mebibyte_of_filler(
        tmp_path: Path) -> None:
    path = stdout_file(tmp_path, REAL, FILLER * 1100)
    assert read_metric_file(path, METRIC).value == Decimal("7.5")


def test_a_line_cut_by_a_chunk_boundary_is_read_whole(tmp_path: Path) -> None:
    cut = CHUNK_BYTES - 10  # the metric line straddles the first chunk's end
    path = stdout_file(tmp_path, "x" * (cut - 1) + "\n", REAL, FAKE)
    assert count_metric_lines(path, METRIC) == 2
    assert read_metric_file(path, METRIC).value == Decimal("5.0")


def test_a_line_over_the_cap_is_skipped_without_ending_the_read(tmp_path: Path) -> None:
    huge = '{"mean_tour_length": 1.0, "pad": "' + "a" * (3 * CHUNK_BYTES) + '"}\n'
    near = '{"mean_tour_length": 2.0, "pad": "' + "a" * (MAX_METRIC_LINE_BYTES + 1) + '"}\n'
    path = stdout_file(tmp_path, REAL, huge, near, FAKE)
    assert count_metric_lines(path, METRIC) == 2
    assert read_metric_file(path, METRIC).value == Decimal("5.0")


def test_memory_stays_bounded_when_stdout_is_far_larger_than_a_chunk(tmp_path: Path) -> None:
    path = tmp_path / "stdout"
    with path.open("w") as handle:
        handle.write(REAL)
        for _ in range(40):
            handle.write(FILLER * 1024)  # 40 MiB of lines
        handle.write("z" * (8 * CHUNK_BYTES) + "\n")  # and one line of 8 MiB
        handle.write(FAKE)
    tracemalloc.start()
    try:
        lines = [line.strip() for line in braced_lines(path)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [REAL.strip(), FAKE.strip()]
    assert peak < 4 * CHUNK_BYTES, peak


def test_a_last_line_without_a_newline_is_read(tmp_path: Path) -> None:
    path = stdout_file(tmp_path, REAL, FAKE.strip())
    assert count_metric_lines(path, METRIC) == 2


def test_a_missing_stdout_counts_no_metric_line(tmp_path: Path) -> None:
    assert count_metric_lines(tmp_path / "missing", METRIC) == 0
    assert read_metric_file(tmp_path / "missing", METRIC).value is None


def test_output_check_reads_log_directories_and_files_whole(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    stdout_file(one, REAL)
    stdout_file(two, REAL, FILLER * 1100, FAKE)
    findings = check_output([one, two, two / "stdout", REAL], METRIC)
    assert [f.summary.split(")")[0] for f in findings] == [
        "The candidate's eval (seed 2", "The candidate's eval (seed 3"]
    assert all("printed 2 lines" in f.summary for f in findings)


def test_text_and_file_readers_agree_on_which_lines_carry_the_metric(tmp_path: Path) -> None:
    text = ('progress {"mean_tour_length": 1}\n  {"mean_tour_length": 2}  \r\n'
            '{"metric": "mean_tour_length", "value": 3}\n["mean_tour_length"]\n'
            '{"other": 4}\n{"mean_tour_length": 5}')
    path = stdout_file(tmp_path, text)
    assert count_metric_lines(path, METRIC) == metric_lines.count_carrying(
        metric_lines.braced_lines_in(text), METRIC) == 3
