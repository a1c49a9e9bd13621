"""The leaderboard (issue 50, point 5): per agent slot (harness + model) of a target, its
runs, the pull requests that carried a credited result and those merged, GPU-hours and
money, and those per credited pull request (None when it has none)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from outerloop.leaderboard import leaderboard, row_text
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord, State

SEATS = {"o/t": [("claude", "opus"), ("codex", "")], "o/u": [("scripted", "")]}


def _seats(target: str) -> list[tuple[str, str]]:
    return SEATS.get(target, [])


def _run(n: int, agent: str, target: str = "o/t", *, improved: bool = False,
         pr: int | None = None, ending: str | None = "negative-result", blocked: str = "",
         gpu_s: int = 0, usd: float = 0.0) -> RunRecord:
    at = f"2026-12-0{1 + n % 5}T10:00:{n:02d}.000000Z"
    run = RunRecord(run_id=f"r{n:02d}", target=target, benchmark="tour", agent=agent,
                    issue=n, issue_title="t", hypothesis="h", queued_at=at, updated_at=at,
                    admitted=True)
    if ending is not None:
        run.state, run.ending, run.ended_at = "ended", ending, at  # type: ignore[assignment]
    if improved:
        run.verdicts.append(ev.Verdict(seq=0, at=at, verdict="improved",  # type: ignore[arg-type]
                                       benchmark="tour", baseline="10", candidate="9"))
    run.pr_number, run.blocked, run.gpu_seconds, run.cost_usd = pr, blocked, gpu_s, usd
    return run


def _state() -> State:
    runs = [
        # slot 1 (agent-01, and agent-03: two slots, so the same one): 2 credited PRs
        _run(1, "agent-01", improved=True, pr=11, ending="merged", gpu_s=7200, usd=1.0),
        _run(2, "agent-03", improved=True, pr=12, ending=None, gpu_s=3600, usd=2.0),
        _run(3, "agent-01", gpu_s=1800, usd=0.5),
        # slot 2: a credited result whose PR the review blocked (a draft): no credited PR
        _run(4, "agent-02", improved=True, pr=13, blocked="tamper", ending="rejected",
             gpu_s=3600, usd=3.0),
        _run(5, "agent-02", usd=1.0),
        # another target, whose one slot runs every agent name
        _run(6, "agent-02", "o/u", improved=True, pr=1, ending="merged", usd=0.25),
    ]
    return State(runs={r.run_id: r for r in runs})


def test_leaderboard_counts_each_slot_and_leaves_per_pr_figures_empty_without_one() -> None:
    rows = {(r.target, r.slot): r.as_dict() for r in leaderboard(_state(), _seats)}
    assert rows[("o/t", 1)] == {
        "target": "o/t", "slot": 1, "harness": "claude", "model": "opus", "runs": 3,
        "credited_prs": 2, "merged_prs": 1, "gpu_hours": 3.5, "money_usd": 3.5,
        "gpu_hours_per_credited_pr": 1.75, "money_usd_per_credited_pr": 1.75}
    assert rows[("o/t", 2)] == {
        "target": "o/t", "slot": 2, "harness": "codex", "model": "", "runs": 2,
        "credited_prs": 0, "merged_prs": 0, "gpu_hours": 1.0, "money_usd": 4.0,
        "gpu_hours_per_credited_pr": None, "money_usd_per_credited_pr": None}
    assert rows[("o/u", 1)]["credited_prs"] == rows[("o/u", 1)]["merged_prs"] == 1
    assert list(rows) == [("o/t", 1), ("o/t", 2), ("o/u", 1)]


def test_leaderboard_counts_settled_runs_from_the_tally_as_whole_ones() -> None:
    walked = _state()
    summarised = copy.deepcopy(walked)
    for run in summarised.runs.live():
        if run.ended:
            run.settled = True
            summarised.runs.summarise(run.run_id)
    assert summarised.runs.summarised("r01")
    assert leaderboard(summarised, _seats) == leaderboard(walked, _seats)


def test_a_run_counts_under_the_seat_it_was_claimed_in_whatever_the_settings_say_now() -> None:
    """A slot moved from codex to claude:sonnet after two runs: one row per seat, each
    run under the seat recorded at its claim (``RunQueued.seat``); a run from before
    seats were recorded under the slot's seat now. Settled the same as walked."""
    state = _state()
    state.runs["r04"].seat = state.runs["r05"].seat = "codex"
    later = _run(7, "agent-02", improved=True, pr=14, ending="merged", usd=2.0)
    later.seat = "claude:sonnet"
    state.runs[later.run_id] = later
    rows = {(r.slot, r.harness, r.model): r for r in leaderboard(state, _seats)
            if r.target == "o/t"}
    assert (rows[(2, "codex", "")].runs, rows[(2, "codex", "")].credited_prs) == (2, 0)
    assert (rows[(2, "claude", "sonnet")].runs, rows[(2, "claude", "sonnet")].merged_prs) == \
        (1, 1)
    assert rows[(1, "claude", "opus")].runs == 3  # no seat recorded: the settings' now
    summarised = copy.deepcopy(state)
    for run in summarised.runs.live():
        if run.ended:
            run.settled = True
            summarised.runs.summarise(run.run_id)
    assert leaderboard(summarised, _seats) == leaderboard(state, _seats)


def test_leaderboard_text_says_no_credited_pr_rather_than_a_made_up_figure() -> None:
    by_slot = {r.slot: row_text(r) for r in leaderboard(_state(), _seats) if r.target == "o/t"}
    assert "slot 1 claude:opus  3 runs, 2 credited PRs, 1 merged" in by_slot[1]
    assert "per credited PR 1.75 GPU-h, $1.75" in by_slot[1]
    assert by_slot[2].endswith("no credited PR") and "slot 2 codex  2 runs" in by_slot[2]


def test_the_board_shows_the_leaderboard_and_escapes_the_lessons_agents_wrote(
        tmp_path: Path) -> None:
    from outerloop.board import render_board
    from outerloop.config import Settings, TargetSettings

    state = _state()
    state.runs["r03"].takeaway = "<script>alert(1)</script> | 2-opt"
    state.last_at = "2026-12-06T00:00:00.000000Z"
    settings = Settings(home=tmp_path, targets=[TargetSettings(repo="o/t")])
    files = render_board(settings, state)
    html, md = files["index.html"], files["CLIMB.md"]
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; | 2-opt" in html
    assert "- `2026-12-04 agent-01 negative-result: <script>alert(1)</script> \\| 2-opt`" in md
    board = json.loads(files["status.json"])["leaderboard"]
    assert [(r["target"], r["slot"], r["runs"], r["credited_prs"]) for r in board] == \
        [("o/t", 1, 5, 2), ("o/u", 1, 1, 1)]  # o/t's settings list no agents: one slot
    assert board[0]["gpu_hours_per_credited_pr"] == 2.25
    assert "<h2>Leaderboard</h2>" in html and "## Lessons: o/t" in md


def test_the_fold_keeps_the_seat_a_run_was_claimed_in() -> None:
    from outerloop.ledger.book import apply_event

    state = State()
    apply_event(state, "t.jsonl", ev.RunQueued(seq=1, at="2026-12-06T10:00:00.000000Z",
                                               run="r", target="o/t", benchmark="tour",
                                               agent="agent-02", seat="claude:sonnet"))
    assert state.runs["r"].seat == "claude:sonnet"

