"""The board's numbers: the chart's axis follows the values (log across orders of
magnitude, never below zero for a metric that cannot be negative), numbers read as
everywhere else, and each target's own caps, costs and GPU-hours are shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from outerloop import board, board_chart
from outerloop.config import LimitsSettings, Settings, TargetSettings
from outerloop.ledger import events as ev
from outerloop.ledger.state import State
from tests.unit.test_board import TARGET, _run, _stamp

TINY = "8.881784197001252e-16"


def _settings(home: Path) -> Settings:
    return Settings(home=home, targets=[TargetSettings(repo=TARGET)],
                    limits=LimitsSettings(max_active_attempts=4))


def _measured(*pairs: tuple[str, str], verdict: str = "improved") -> State:
    """One ended run per (baseline, candidate) pair, in order."""
    state = State(last_at=_stamp(9))
    for n, (base, cand) in enumerate(pairs):
        run = _run(n, ending="merged")
        run.verdicts.append(ev.Verdict(seq=0, at=run.updated_at, verdict=verdict,
                                       benchmark="tour", baseline=base, candidate=cand,
                                       seeds=3))
        state.runs[run.run_id] = run
    return state


def _ticks(html: str) -> list[str]:
    svg = html[html.index("<svg"):html.index("</svg>")]
    return re.findall(r'text-anchor="end" font-size="12" fill="#667085">([^<]*)</text>', svg)


def _dot_ys(html: str) -> list[float]:
    return [float(y) for y in re.findall(r'<circle cx="[^"]+" cy="([^"]+)"', html)]


def test_axis_is_logarithmic_when_an_error_falls_by_orders_of_magnitude(
        tmp_path: Path) -> None:
    html = board.render_board(_settings(tmp_path), _measured(("0.0005", TINY)))["index.html"]
    ticks = _ticks(html)
    assert ticks == ["1e-15", "1e-12", "1e-9", "1e-6", "0.001"]  # powers of ten, upwards
    assert all(not t.startswith("-") for t in ticks)
    assert "log scale" in html
    low, high = board_chart.TOP, board_chart.CHART_H - board_chart.BOTTOM
    ys = _dot_ys(html)
    assert all(low <= y <= high for y in ys)
    assert max(ys) - min(ys) > (high - low) / 2  # the fall is drawn, not squashed flat


def test_axis_never_runs_below_zero_when_no_value_is_negative(tmp_path: Path) -> None:
    state = _measured(("0.0005", "0.0003"), ("0.0003", "0"))
    html = board.render_board(_settings(tmp_path), state)["index.html"]
    ticks = _ticks(html)
    assert ticks[0] == "0" and all(not t.startswith("-") for t in ticks)
    assert "log scale" not in html
    # the axis starts at zero: the error that reached 0 sits on the bottom line
    assert max(_dot_ys(html)) == board_chart.CHART_H - board_chart.BOTTOM


def test_axis_is_linear_with_round_ticks_when_values_are_close(tmp_path: Path) -> None:
    state = _measured(("100.0", "95.0"), ("95.0", "90.0"))
    ticks = _ticks(board.render_board(_settings(tmp_path), state)["index.html"])
    assert ticks == ["90", "95", "100"]


def test_axis_goes_below_zero_only_when_a_value_is_negative() -> None:
    from decimal import Decimal

    axis = board_chart.y_axis([Decimal("-5"), Decimal("5")])
    assert not axis.log and axis.low < -5 and any(t.startswith("-") for _, t in axis.ticks)
    assert board_chart.y_axis([Decimal("1"), Decimal("50")]).log is False
    assert board_chart.y_axis([Decimal("1"), Decimal("100")]).log is True


def test_numbers_read_alike_on_the_board_and_stay_raw_in_status_json(tmp_path: Path) -> None:
    files = board.render_board(_settings(tmp_path), _measured(("0.0005", TINY)))
    html, md = files["index.html"], files["CLIMB.md"]
    for text in (html, md):
        assert "0.0005 → 8.882e-16" in text and "best so far 8.882e-16" in text
        assert "8.881784197001252" not in text and "0.0000000" not in text
    data = json.loads(files["status.json"])
    assert data["runs"][0]["last_verdict"] == "improved 0.0005 → 8.882e-16"
    assert data["charts"][0]["points"][0]["candidate"] == TINY  # raw for machines


def test_board_shows_the_contracts_own_cap_when_admission_recorded_it(
        tmp_path: Path) -> None:
    state = _measured(("1", "0.5"))
    live = _run(5, state="running", at=_stamp(8))
    state.runs[live.run_id] = live
    state.gpu_budgets[TARGET] = ev.GpuBudget(seq=0, at=_stamp(1), target=TARGET,
                                             run_hours=2, week_hours=10,
                                             max_active_attempts=1)
    files = board.render_board(_settings(tmp_path), state)
    assert "<b>1 / 1</b>" in files["index.html"] and "/ 4" not in files["index.html"]
    assert "| 1 / 1 |" in files["CLIMB.md"]
    data = json.loads(files["status.json"])
    assert data["budgets"]["caps"] == [{"target": TARGET, "active": 1, "max_active": 1}]


@pytest.mark.parametrize(("cost", "gpu_seconds", "shown_cost", "shown_hours"), [
    (0.0, 0, "—", "0"),
    (0.0042, 5400, "$0.0042", "1.5"),
    (12.5, 50, "$12.50", "0.0139"),
])
def test_runs_show_their_cost_and_gpu_hours_never_an_empty_cell(
        tmp_path: Path, cost: float, gpu_seconds: int, shown_cost: str,
        shown_hours: str) -> None:
    state = _measured(("1", "0.5"))
    (run,) = state.runs.values()
    run.cost_usd, run.gpu_seconds = cost, gpu_seconds
    files = board.render_board(_settings(tmp_path), state)
    assert (f'<td class="num" data-label="cost">{shown_cost}</td>\n'
            f'<td class="num" data-label="GPU-h">{shown_hours}</td>') in files["index.html"]
    (row,) = [line for line in files["CLIMB.md"].splitlines()
              if line.startswith("| merged |") and run.run_id in line]
    assert row.endswith(f"| {shown_cost} | {shown_hours} |")
    data = json.loads(files["status.json"])
    assert data["runs"][0]["gpu_hours"] == round(gpu_seconds / 3600, 4)
