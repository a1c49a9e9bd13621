"""Inputs for the renderers, gathered from a run's record, and the channel views
the agent's query verbs read. Rendering itself is pure (``render.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from outerloop.attempt.channel import MAX_LAUNCH_MINUTES
from outerloop.attempt.context import RunContext
from outerloop.attempt.suite import guards_of
from outerloop.compute.base import JobObservation, JobState
from outerloop.contract import CONTRACT_FILE
from outerloop.ledger import events as ev
from outerloop.lessons import lesson_lines
from outerloop.numfmt import format_number, verdict_digits
from outerloop.run.lines import memory_at, shortstat
from outerloop.run.render import (
    BenchmarkView,
    BriefInputs,
    BudgetView,
    FeedbackView,
    LaunchResult,
    LineView,
    OperatorView,
    ReportInputs,
    ReportView,
    RevisionView,
    RulerView,
    VerdictView,
    WakeInputs,
    recorded_view,
    render_brief,
    render_report,
)
from outerloop.run.render_wake import render_wake
from outerloop.run.workspace import read_at

RECENT_REPORTS = 5
AGENT_REPORT_FILE = "agent-report.md"


def budget(ctx: RunContext) -> BudgetView:
    gpu = ctx.gpu_budget()
    return BudgetView(
        launches_left=ctx.launches_left(), sleeps_left=ctx.sleeps_left(),
        gpu_hours_left=gpu.left, gpu_hours_used=round(gpu.run_used, 4),
        max_launch_gpus=ctx.max_launch_gpus(),
        session_minutes=ctx.limits.session_minutes, max_launch_minutes=MAX_LAUNCH_MINUTES,
        usd_spent=round(ctx.run.cost_usd, 4), usd_cap=ctx.limits.usd_per_run)


def channel_limits(ctx: RunContext) -> dict[str, Any]:
    return {"launches_left": ctx.launches_left(), "sleeps_left": ctx.sleeps_left(),
            "max_launch_gpus": ctx.max_launch_gpus()}


def _recent_reports(ctx: RunContext) -> list[ReportView]:
    """The target's newest ended runs' reports, from the runs' recent window
    (``History.recent``), never by reading every past run: each leg's brief would cost
    the whole history."""
    from outerloop.ledger.history import History

    newest = History.of(ctx.state.runs, ctx.run.target).newest_ended(RECENT_REPORTS + 1)
    ended = [r for r in newest if r.run_id != ctx.run.run_id]
    return [ReportView(run_id=r.run_id, ending=r.ending or "", text=r.report)
            for r in ended[:RECENT_REPORTS]]


def tried_lines(ctx: RunContext) -> list[str]:
    """One line per earlier ended run of the target, newest first (``lessons``)."""
    from outerloop.ledger.history import History

    return lesson_lines(History.of(ctx.state.runs, ctx.run.target), ctx.run.run_id)


def brief(ctx: RunContext, operator: list[OperatorView] | None = None) -> str:
    run = ctx.run
    assert run.base_sha is not None
    base, best, best_run = ctx.ruler()
    return render_brief(BriefInputs(
        run_id=run.run_id, agent=run.agent, target=run.target,
        benchmark=BenchmarkView(name=ctx.benchmark.name, metric=ctx.benchmark.metric,
                                direction=ctx.benchmark.direction,
                                command=ctx.benchmark.command, score=ctx.benchmark.score,
                                outputs=ctx.benchmark.outputs,
                                eval_only=list(ctx.contract.eval_only),
                                confidence=ctx.benchmark.confidence,
                                max_pairs=ctx.benchmark.max_pairs),
        issue_number=run.issue, issue_title=run.issue_title, hypothesis=run.hypothesis,
        contract_text=read_at(ctx.paths, run.base_sha, CONTRACT_FILE) or "",
        ruler=ruler_view(base, best, best_run, ctx.benchmark.display_digits),
        lessons=read_at(ctx.paths, run.base_sha, ctx.contract.roadmap) or "",
        recent_reports=_recent_reports(ctx), budget=budget(ctx),
        scope_allowed=list(ctx.contract.scope.allowed),
        guidance=ctx.contract.guidance_text,
        guards=[b.name for _, b in guards_of(ctx.contract, ctx.benchmark)],
        operator=operator or [], tried=tried_lines(ctx), line=line_view(ctx),
    ))


def line_view(ctx: RunContext) -> LineView | None:
    """The run's research line as the brief shows it (None: no line): its divergence
    from the base at the run's start, and the memory index as the line's latest commit
    holds it (the agent's own writing, scanned for secrets when it was saved)."""
    line, base = ctx.run.line, ctx.run.base_sha
    if line is None or base is None:
        return None
    memory = memory_at(ctx.paths, line.head or line.start)
    return LineView(branch=line.branch, start=line.start, new=line.start == base,
                    divergence=shortstat(ctx.paths, base, line.start),
                    conflicts=line.conflicts, withheld=line.withheld,
                    memory=memory.text, memory_unshown=memory.unshown)


def ruler_view(base: Decimal | None, best: Decimal | None, best_run: str | None,
               display_digits: int | None) -> RulerView:
    """The ruler as the brief shows it: baseline and best at the digits a verdict
    between them would be shown at (``numfmt``)."""
    digits = verdict_digits(base, best, display_digits)
    return RulerView(baseline=None if base is None else format_number(base, digits),
                     best=None if best is None else format_number(best, digits),
                     best_run=best_run)


def wake(ctx: RunContext, leg: int, results: list[LaunchResult], verdict: VerdictView | None,
         feedback: list[FeedbackView], notes: list[str],
         operator: list[OperatorView] | None = None) -> str:
    return render_wake(WakeInputs(
        run_id=ctx.run.run_id, leg=leg, results=results, verdict=verdict, feedback=feedback,
        notes=notes, budget=budget(ctx), pr_number=ctx.run.pr_number,
        operator=operator or [], revision=revision_view(ctx)))


def revision_view(ctx: RunContext) -> RevisionView | None:
    """While the run revises a candidate the review blocked: which, and the round."""
    asked = ctx.run.revision
    if asked is None or not ctx.run.revising:
        return None
    return RevisionView(submission=asked.submission, round=asked.round,
                        rounds=max(asked.round, ctx.settings.review.revisions))


def write_views(ctx: RunContext, came_back: Sequence[LaunchResult] = (),
                session_job: str | None = None) -> None:
    """Refresh the files ``status``, ``history``, ``queue``, ``siblings`` and
    ``reports`` answer from, and the limits the tool checks against.

    ``came_back``: the launch results a wake prompt carries. Their launches are written
    from them (state, exit code, elapsed, task by task), so the files agree with
    the prompt even before the ledger records the jobs' ends.
    ``session_job``: the job this leg runs in, shown running (the ledger may not have
    seen it start yet)."""
    from outerloop.attempt import channel

    run = ctx.run
    status = {
        "run_id": run.run_id, "benchmark": run.benchmark, "agent": run.agent,
        "state": run.state, "sleeps_used": run.sleeps, "sleeps_left": ctx.sleeps_left(),
        "launches_used": len(run.launches), "launches_left": ctx.launches_left(),
        "pr": run.pr_number,
    }
    # One scheduler query for the run's jobs the ledger holds as not ended (this leg's
    # own aside): the GPU-hours they used and whether they have ended by now.
    seen = ctx.observe([j.job_id for j in ctx.state.jobs.values() if j.run == run.run_id
                        and not j.terminal and j.job_id != session_job])
    gpu = ctx.gpu_budget(seen)
    status["gpu_hours_used"] = round(gpu.run_used, 4)
    status["gpu_hours_left"] = gpu.left
    history = _history_view(ctx, came_back)
    queue = _queue_view(ctx, came_back, session_job, seen)
    siblings = []
    if ctx.contract.channels.siblings:
        siblings = [{"run_id": r.run_id, "agent": r.agent, "benchmark": r.benchmark,
                     "headline": r.issue_title[:300]}
                    for r in ctx.state.active_runs(run.target) if r.run_id != run.run_id]
    reports = {}
    if ctx.contract.channels.shared_reports:
        reports = {r.run_id: r.text for r in _recent_reports(ctx)}
    try:
        channel.write_views(ctx.paths.ws, status=status, history=history, queue=queue,
                            siblings=siblings, reports=reports)
        channel.write_limits(ctx.paths.ws, channel_limits(ctx))
    except (channel.ChannelError, OSError) as exc:  # the agent's own channel, sabotaged
        ctx.append(ev.Note(level="warning", text=f"the agent's channel views could not be "
                           f"refreshed (the leg goes on without them): {str(exc)[:300]}"))


def _queue_view(ctx: RunContext, came_back: Sequence[LaunchResult], session_job: str | None,
                seen: Mapping[str, JobObservation]) -> list[dict[str, Any]]:
    """``queue.json``: the run's jobs the ledger holds as not ended, less those that
    have ended by now: the launches that came back, and any the scheduler (``seen``)
    calls ended; unanswered, the ledger's word stands. A wake starts the moment its
    launches end, before a tick has recorded their ends or the last leg's;
    ``session_job`` (this leg's own job) is shown running."""
    came = {result.job_id for result in came_back}
    ended = came | {job_id for job_id, obs in seen.items()
                    if obs.state.terminal or obs.state == JobState.GONE}
    return [{"job": j.job_id, "name": j.name,
             "state": "running" if j.job_id == session_job else j.state, "limit_minutes": 0}
            for j in ctx.state.jobs.values()
            if j.run == ctx.run.run_id and not j.terminal and j.job_id not in ended]


def _history_view(ctx: RunContext,
                  came_back: Sequence[LaunchResult]) -> list[dict[str, Any]]:
    """``history.json``: one entry per launch, or per task of a launch that came back."""
    from outerloop.attempt.results import last_line, last_line_of

    results: dict[str, list[LaunchResult]] = {}
    for result in came_back:
        results.setdefault(result.job_id, []).append(result)
    history: list[dict[str, Any]] = []
    for launch in ctx.run.launches:
        for result in results.get(launch.job_id, []):
            history.append({
                "sleep": launch.sleep, "name": launch.name, "task": result.task,
                "why": launch.why, "job": launch.job_id, "state": str(result.state),
                "exit_code": result.exit_code, "elapsed_s": result.elapsed_s,
                "last_line": last_line_of(result.stdout_tail),
            })
        if launch.job_id in results:
            continue
        job = ctx.state.jobs.get(launch.job_id)
        log = ctx.paths.job_dir(launch.job_name or launch.name)
        history.append({
            "sleep": launch.sleep, "name": launch.name, "why": launch.why,
            "job": launch.job_id, "state": job.state if job else "unknown",
            "elapsed_s": job.elapsed_s if job else 0,
            "last_line": last_line(log / "stdout" if not launch.array
                                   else log / "0" / "stdout"),
        })
    return history


def save_report(ctx: RunContext, text: str) -> None:
    ctx.paths.root.joinpath(AGENT_REPORT_FILE).write_text(text, encoding="utf-8")


def load_report(ctx: RunContext) -> str:
    path = ctx.paths.root / AGENT_REPORT_FILE
    return path.read_text(encoding="utf-8") if path.exists() else ""


def final_report(ctx: RunContext, ending: str, note: str, agent_note: str = "") -> str:
    """The run's closing report: ``note`` is the kernel's (one line), ``agent_note``
    the agent's own words on the ending (quoted, attributed)."""
    from outerloop.attempt.results import experiment_rows

    run = ctx.run
    verdicts = [recorded_view(v) for v in run.verdicts]
    return render_report(ReportInputs(
        run_id=run.run_id, ending=ending, benchmark=run.benchmark, hypothesis=run.hypothesis,
        agent_report=load_report(ctx), verdicts=verdicts, pr_number=run.pr_number,
        experiments=experiment_rows(ctx), note=note, agent_note=agent_note))
