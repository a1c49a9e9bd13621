"""The research-log planner: what humans read about a target, built from the ledger.

Per target, one ``PublishRecord`` action per tick at most, only when something
changed since the last published record: ``results/leader.json`` (per benchmark:
baseline, best, best run, updated), ``BENCHMARKS.md`` (every measured improvement and
what became of it), ``reports/<run_id>.md`` for each ended run not yet published, and
the target's board (``board/index.html``, ``board/status.json``, ``board/CLIMB.md``).
Pure: the files are rendered from ``State`` alone, so the same ledger gives the same
bytes, and the action's key (``record:<target>:<content hash>``) is stable.

What was published is folded from the ``done`` results of earlier record actions: the
runs whose reports went out are ``recorded``, and the latest record's digests are the
target's ``State.published``, so an old report is never sent again and a tick with
nothing new plans nothing. A target whose forge observation failed is skipped.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import TYPE_CHECKING

from outerloop.board_memo import files_digest as _digest
from outerloop.config import Settings
from outerloop.kernel.actions import Action, PublishRecord, RecordEvent
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger.events import GpuBudget, Verdict
from outerloop.ledger.history import IMPROVEMENT_ROWS, History, RowKey
from outerloop.ledger.state import Published, RunRecord, State
from outerloop.numfmt import format_pair
from outerloop.vocabulary import GateVerdict

if TYPE_CHECKING:
    from outerloop.board_memo import BoardMemo

BRANCH = "research-log"


def leader_json(state: State, target: str) -> str:
    board: dict[str, dict[str, str | None]] = {}
    for (repo, benchmark), leader in sorted(state.leaders.items(), key=itemgetter(0)):
        if repo == target:
            board[benchmark] = {"baseline": leader.baseline, "best": leader.value,
                                "best_run": leader.run, "updated": leader.at}
    return json.dumps(board, indent=2, sort_keys=True) + "\n"


def _status(run: RunRecord) -> str:
    if run.ended:
        return run.ending or "ended"
    return "in review" if run.pr_number is not None else "pending"


def benchmarks_md(history: History) -> str:
    """Every measured improvement, by the run's queue time: the newest
    ``IMPROVEMENT_ROWS`` (the settled runs' from their tally), the older ones counted."""
    rows: list[tuple[RowKey, str]] = []
    older = 0
    for tally in history.tallies.values():
        older += tally.improvements_older
        rows += [(key, _row(i.benchmark, i.run, i.verdict, i.ending, i.pr))
                 for key, i in tally.improvements]
    for run in history.untallied:
        rows += [((run.queued_at, run.run_id, n),
                  _row(run.benchmark, run.run_id, v, _status(run), run.pr_number))
                 for n, v in enumerate(run.verdicts) if v.verdict == GateVerdict.IMPROVED]
    rows.sort(key=itemgetter(0))
    cut = max(0, len(rows) - IMPROVEMENT_ROWS)
    older += cut
    lines = ["# Measured improvements", "",
             "Every candidate outerloop measured as better than its base, and what became "
             "of it.", ""]
    if older:
        lines += [f"The newest {IMPROVEMENT_ROWS} are listed; {older} older ones are in this "
                  "file's history on this branch.", ""]
    lines += ["| benchmark | run | baseline | candidate | seeds | status | PR |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [text for _, text in rows[cut:]]
    return "\n".join(lines) + "\n"


def _row(benchmark: str, run_id: str, verdict: Verdict, status: str, pr: int | None) -> str:
    base, cand = format_pair(verdict.baseline, verdict.candidate, verdict.display_digits)
    return (f"| {benchmark} | {run_id} | {base} | {cand} | {verdict.seeds} | {status} | "
            f"{f'#{pr}' if pr else ''} |")


def plan_target(state: State, target: str, settings: Settings | None = None,
                budget: GpuBudget | None = None, boards: BoardMemo | None = None
                ) -> PublishRecord | None:
    """The record action for ``target``, or None when nothing changed. With
    ``settings``, the target's board (``board/index.html``, ``status.json``,
    ``CLIMB.md``) is part of the record and a changed board is a change; with
    ``boards``, a board whose view was rendered before is not rendered again to learn
    its digest (only to publish it)."""
    history = History.of(state.runs, target)
    runs = sorted(history.live, key=lambda r: (r.queued_at, r.run_id))  # settled: recorded
    summary_files = {"results/leader.json": leader_json(state, target),
                     "BENCHMARKS.md": benchmarks_md(history)}
    has_content = history.total > len(history.untallied) or any(
        r.verdicts or r.ended for r in history.untallied) or any(
        repo == target for repo, _ in state.leaders)
    if not has_content:
        return None
    last = state.published.get(target, Published())
    summary = _digest(summary_files)
    board_files: dict[str, str] = {}
    board = ""
    if settings is not None:
        from outerloop.board import published_files, target_view
        from outerloop.board_memo import view_key

        view = target_view(settings, state, target, budget, history)
        key = view_key(view) if boards is not None else ""
        known = boards.rendered(f"target:{target}", key) if boards is not None else None
        if known is None:
            board_files = published_files(view, settings.home)  # jinja2: only here
            board = _digest(board_files)
            if boards is not None:
                boards.remember(f"target:{target}", key, board)
        else:
            board = known
    fresh = {r.run_id: r.report for r in runs
             if r.ended and r.report and not r.recorded}
    if not fresh and summary == last.summary and board == last.board:
        return None
    if settings is not None and not board_files:  # changed: the files to publish
        board_files = published_files(view, settings.home)
    files = dict(summary_files)
    files.update({f"reports/{run_id}.md": text for run_id, text in fresh.items()})
    files.update(board_files)
    action = PublishRecord(target=target, branch=BRANCH, files=files,
                           reports=sorted(fresh), summary=summary, board=board,
                           digest=_digest(files))
    return None if action.key == last.key else action


def _budget_recorded_now(planned: list[Action], target: str) -> GpuBudget | None:
    """The target's budgets as admission records them in this same tick (its caps on
    the published board now, not one tick later)."""
    for action in planned:
        if isinstance(action, RecordEvent) and action.target == target \
                and isinstance(action.event, GpuBudget):
            return action.event
    return None


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    """Nothing new folded since the last tick (``state.fresh == 0``) means nothing new
    to publish: the previous tick already planned from this same state, and a publish
    that failed left a ``failed`` event, which makes the next state fresh. So a quiet
    tick skips rendering the record over the whole history."""
    actions: list[Action] = []
    if view.state.fresh == 0:
        return actions
    for target in view.settings.targets:
        seen = view.obs.targets.get(target.repo)
        if seen is None or seen.error:
            continue
        action = plan_target(view.state, target.repo, view.settings,
                             _budget_recorded_now(planned, target.repo), view.boards)
        if action is not None:
            actions.append(action)
    return actions
