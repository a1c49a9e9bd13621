"""The board tells the truth (issue 51): progress counts merged results only; a credited
result not merged is shown apart, a blocked draft is marked blocked with why; every
result shows its interval, pairs and confidence; the chart's x axis is time; a CPU
target shows no GPU card.

The history: on ``tour`` (lower is better) an honest merged 7 -> 6.521, a cheat's
tamper-blocked draft 7 -> 3.745, a rejected pull request's 7 -> 5.0, an open one's
6.521 -> 6.4, then a burst of measurements within two minutes. Each test holds the
history live (runs not settled) and settled (read from the tally), where it matters.
"""

from __future__ import annotations

import copy
import json
import re
from itertools import pairwise
from pathlib import Path

import pytest

from outerloop import board, board_chart, board_time
from outerloop.config import Settings, TargetSettings
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.events import ReviewFinding
from outerloop.ledger.history import blocked_why
from outerloop.ledger.state import RunRecord, State
from tests.unit.test_board import TARGET, _stamp

CPU_TARGET = "demo/cpu-only"
TAMPER = ReviewFinding(severity="blocking", summary="the candidate writes the scorer's output",
                       source="tamper check")


def _settings(home: Path) -> Settings:
    return Settings(home=home, targets=[TargetSettings(repo=TARGET)])


def _verdict(at: str, base: str, cand: str, verdict: str = "improved") -> ev.Verdict:
    return ev.Verdict(seq=0, at=at, verdict=verdict, benchmark="tour", baseline=base,
                      candidate=cand, delta=str(round(float(base) - float(cand), 6)),
                      low="0.31", high="0.65", seeds=8, confidence=0.95, seal_sha="s" * 40)


def _run(name: str, at: str, verdict: ev.Verdict, *, ending: str | None,
         pr: int | None = None) -> RunRecord:
    run = RunRecord(run_id=name, target=TARGET, benchmark="tour", agent="agent-01",
                    issue=None, issue_title=name, hypothesis=name, queued_at=at,
                    updated_at=at, admitted=True, pr_number=pr)
    run.verdicts.append(verdict)
    if ending is not None:
        run.state, run.ending, run.ended_at = "ended", ending, at
        run.end_reason = "its pull request was closed" if ending == "rejected" else ""
    else:
        run.state, run.park_reason = "parked", "review"
    return run


def _history(*, settled: bool = False) -> State:
    """The climb above; ``settled``: every ended run settled and read from the tally
    (the cheat's draft is then closed: its run ended rejected, still blocked)."""
    state = State(last_at=_stamp(5))
    honest = _run("honest", _stamp(1, 9), _verdict(_stamp(1, 9), "7.000", "6.521"),
                  ending="merged", pr=11)
    cheat = _run("cheat", _stamp(2, 9), _verdict(_stamp(2, 9), "7.000", "3.745"),
                 ending="rejected" if settled else None, pr=12)
    cheat.blocked = blocked_why([TAMPER], "")
    rejected = _run("rejected", _stamp(3, 9), _verdict(_stamp(3, 9), "7.000", "5.0"),
                    ending="rejected", pr=13)
    opened = _run("opened", _stamp(3, 10), _verdict(_stamp(3, 10), "6.521", "6.4"),
                  ending=None, pr=14)
    burst = _run("burst", _stamp(4, 12), _verdict(_stamp(4, 12), "6.521", "6.6",
                                                  "no-improvement"), ending="negative-result")
    for k in range(1, 6):
        burst.verdicts.append(_verdict(f"2024-05-04T12:00:{k * 20:02d}.000000Z", "6.521",
                                       "6.7", "no-improvement"))
    for run in (honest, cheat, rejected, opened, burst):
        state.runs[run.run_id] = run
    state.leaders[(TARGET, "tour")] = ev.Leader(seq=0, at=_stamp(1, 10), run="honest",
                                                target=TARGET, benchmark="tour",
                                                value="6.521", baseline="7.000")
    if settled:
        for run in state.runs.live():
            if run.ended:
                run.report_posted = run.recorded = run.settled = True
                run.verdicts = [v for v in run.verdicts if v.verdict == "improved"]
                state.runs.summarise(run.run_id)
    return state


def _files(tmp_path: Path, state: State) -> dict[str, str]:
    return board.render_board(_settings(tmp_path), state)


def _chart(state: State) -> board_chart.Chart:
    (chart,) = board.build_view(_settings(Path("/nonexistent")), state).charts
    return chart


@pytest.mark.parametrize("settled", [False, True])
def test_a_blocked_draft_never_becomes_the_best_when_its_number_is_lower(
        tmp_path: Path, settled: bool) -> None:
    state = _history(settled=settled)
    chart = _chart(state)
    assert chart.best == "6.521"
    assert all(p.best != "3.745" for p in chart.points)
    files = _files(tmp_path, state)
    assert "best so far 6.521 (merged)" in files["index.html"]
    assert "best so far 6.521 (merged)" in files["CLIMB.md"]
    assert json.loads(files["status.json"])["charts"][0]["best"] == "6.521"
    # the drawn best line never comes down to the draft's height (lower is better: down)
    ys = {float(xy.split(",")[1]) for xy in chart.best_line.split()}
    (cheat,) = [d for d in chart.dots if d.kind == "blocked"]
    assert max(ys) < cheat.y


@pytest.mark.parametrize("settled", [False, True])
def test_a_rejected_pull_requests_candidate_never_becomes_the_best_when_better(
        settled: bool) -> None:
    state = _history(settled=settled)
    del state.runs["cheat"]
    chart = _chart(state)
    assert chart.best == "6.521"
    (rejected,) = [p for p in chart.points if p.run == "rejected"]
    assert rejected.standing == "not-merged" and rejected.best == "6.521"


def test_the_best_moves_when_a_result_merges(tmp_path: Path) -> None:
    state = _history()
    state.runs["opened"].state, state.runs["opened"].ending = "ended", "merged"
    assert _chart(state).best == "6.4"


@pytest.mark.parametrize("settled", [False, True])
def test_credited_unmerged_and_blocked_results_are_shown_apart_when_rendered(
        tmp_path: Path, settled: bool) -> None:
    files = _files(tmp_path, _history(settled=settled))
    data = json.loads(files["status.json"])
    standings = {r["run"]: r["standing"] for r in data["results"]}
    assert standings == {"honest": "merged", "cheat": "blocked", "rejected": "not-merged",
                         "opened": "open"}
    assert data["charts"][0]["results"] == {"blocked": 1, "merged": 1, "not-merged": 1,
                                            "open": 1}
    html = files["index.html"]
    rows = re.findall(r'<tr class="result-([a-z-]+)">\n<td[^>]*><span[^>]*>([^<]*)</span>'
                      r'</td>\n<td[^>]*>([^<]*)</td>', html)
    assert [(kind, words) for kind, words, _why in rows] == [
        ("merged", "merged"), ("open", "credited, awaiting merge"),
        ("blocked", "blocked (draft)"), ("not-merged", "credited, not merged")]
    why = {kind: text for kind, _words, text in rows}
    assert "tamper check: the candidate writes the scorer&#39;s output" in why["blocked"]
    assert "rejected" in why["not-merged"] and "PR #14" in why["open"]
    assert "blocked (draft)" in files["CLIMB.md"]


def test_a_draft_runs_state_says_blocked_and_why_when_its_run_is_live(
        tmp_path: Path) -> None:
    data = json.loads(_files(tmp_path, _history())["status.json"])
    (row,) = [r for r in data["runs"] if r["run"] == "cheat"]
    assert row["state"] == "blocked: draft PR"
    assert "1 blocking finding: tamper check" in row["reason"]


def test_the_fold_marks_a_draft_blocked_and_a_ready_candidate_clears_it() -> None:
    state = State()
    at = _stamp(1)
    apply_event(state, "t.jsonl", ev.RunQueued(seq=1, at=at, run="r", target=TARGET,
                                               benchmark="tour", agent="agent-01"))
    ready = ev.PublishReady(seq=2, at=at, run="r", seal_sha="s", branch="b", title="t",
                            body="body", draft=True, findings=[TAMPER])
    apply_event(state, "r.jsonl", ready)
    assert state.runs["r"].blocked.startswith("1 blocking finding: tamper check")
    apply_event(state, "r.jsonl", ev.PublishReady(seq=3, at=at, run="r", seal_sha="t",
                                                  branch="b", title="t", body="body"))
    assert state.runs["r"].blocked == ""
    apply_event(state, "r.jsonl", ev.RevisionAsked(seq=4, at=at, run="r", submission=2,
                                                   round=1, findings=[TAMPER], draft=ready))
    assert state.runs["r"].blocked.startswith("sent back to revise (round 1)")


@pytest.mark.parametrize("settled", [False, True])
def test_each_result_shows_its_interval_pairs_and_confidence_when_rendered(
        tmp_path: Path, settled: bool) -> None:
    files = _files(tmp_path, _history(settled=settled))
    told = "(interval 0.31 to 0.65) · 8 pairs · confidence 95%"
    for name in ("index.html", "CLIMB.md"):
        assert files[name].count(told) == 4, name  # every credited result
    data = json.loads(files["status.json"])
    for result in data["results"]:
        assert (result["low"], result["high"], result["pairs"], result["confidence"]) == \
            ("0.31", "0.65", 8, 0.95)
    (point,) = [p for p in data["charts"][0]["points"] if p["run"] == "honest"]
    assert (point["low"], point["high"], point["pairs"], point["standing"]) == \
        ("0.31", "0.65", 8, "merged")


def test_a_verdict_without_an_interval_says_so_when_shown(tmp_path: Path) -> None:
    state = _history()
    old = state.runs["honest"].verdicts[0]
    state.runs["honest"].verdicts[0] = ev.Verdict(
        seq=0, at=old.at, verdict=old.verdict, benchmark="tour", baseline=old.baseline,
        candidate=old.candidate, seeds=3, order="0.01")
    html = _files(tmp_path, state)["index.html"]
    assert "gain not recorded (interval not recorded) · 3 couples (6 pair jobs) · " \
           "confidence not recorded" in html


def test_the_x_axis_is_time_with_dated_ticks_when_measurements_span_days() -> None:
    chart = _chart(_history())
    labels = [text for _x, _anchor, text in chart.x_labels]
    assert len(labels) >= 3 and len(set(labels)) == len(labels)
    assert all(re.fullmatch(r"2024-05-0\d", text) for text in labels), labels
    xs = [d.x for d in chart.dots if d.kind != "baseline"]
    assert xs == sorted(xs)
    # a day's gap is wider than a minute's, and the burst keeps the minimum spacing
    by_run: dict[str, list[float]] = {}
    for d in chart.dots:
        if d.kind != "baseline":
            by_run.setdefault(d.label.split("(")[-1].split(",")[0], []).append(d.x)
    burst = by_run["burst"]
    gaps = [b - a for a, b in pairwise(burst)]
    assert min(gaps) >= board_time.MIN_GAP_PX - 0.2
    assert by_run["rejected"][0] - by_run["cheat"][0] > max(gaps) * 5
    # ticks sit where their day begins, between the points around it
    tick_x = dict((text, x) for x, _anchor, text in chart.x_labels)
    assert by_run["cheat"][0] < tick_x["2024-05-03"] < by_run["rejected"][0]


def test_a_burst_within_minutes_gets_minute_ticks_when_it_is_all_there_is() -> None:
    times = [1_714_820_400.0 + 20 * k for k in range(7)]  # 2024-05-04 11:00, 2 minutes
    xs = board_time.positions(times, 64.0, 626.0)
    labels = [text for _x, text in board_time.ticks(times, xs)]
    assert len(labels) >= 2 and all(re.fullmatch(r"05-04 11:0\d", t) for t in labels)


def test_a_cpu_target_shows_no_gpu_card_when_it_has_no_gpu_budget(tmp_path: Path) -> None:
    state = _history()
    state.gpu_budgets[CPU_TARGET] = ev.GpuBudget(seq=0, at=_stamp(1), target=CPU_TARGET,
                                                 run_hours=0, week_hours=0,
                                                 max_active_attempts=1)
    gpu = copy.copy(state.gpu_budgets[CPU_TARGET])
    state.gpu_budgets[TARGET] = ev.GpuBudget(seq=0, at=gpu.at, target=TARGET, run_hours=2,
                                             week_hours=50, max_active_attempts=1)
    settings = Settings(home=tmp_path, targets=[TargetSettings(repo=TARGET),
                                                TargetSettings(repo=CPU_TARGET)])
    files = board.render_board(settings, state)
    cards = re.findall(r"GPU-hours in 7 days, ([^<(]*)", files["index.html"])
    assert [c.strip() for c in cards] == [TARGET]
    assert f"GPU-hours in 7 days, {CPU_TARGET}" not in files["CLIMB.md"]
    assert [g["target"] for g in json.loads(files["status.json"])["budgets"]["gpu"]] == [TARGET]
