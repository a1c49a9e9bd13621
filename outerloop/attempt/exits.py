"""How a climb or wake job leaves its run: parked on jobs with its wake job
submitted, parked in review, or ended with the final report.

A park records the wake job's id and a deadline (the jobs' minutes plus
``QUEUE_SLACK_H`` of queueing), so the sweep can tell a wake that never came from one
still waiting in the queue. ``RETRY_SUFFIX`` names the one re-run of an eval a node
failure interrupted (and its wake)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from outerloop import clock
from outerloop.attempt import prompts
from outerloop.attempt.context import RunContext
from outerloop.clock import stamp
from outerloop.ledger import book
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending
from outerloop.run import jobs
from outerloop.text import one_line
from outerloop.vocabulary import JobPurpose

MAX_REASON_CHARS = 300
"""An ending's reason (``run_ended.reason``) is one line of at most this many characters;
the report's kernel note carries it whole."""

QUEUE_SLACK_H = 12
RETRY_SUFFIX = "-r1"


def _deadline(minutes: int) -> str:
    return stamp(clock.now() + timedelta(minutes=minutes, hours=QUEUE_SLACK_H))


ParkedOn = Literal["jobs", "eval", "review"]
"""What a park waits on (the ``parked`` event's ``reason``)."""


def park_on(ctx: RunContext, reason: ParkedOn, job_ids: list[str], sleep: int, *,
            seal_sha: str | None, minutes: int,
            evals: list[ev.EvalPair] | None = None, retry: bool = False,
            left_out: list[str] | None = None, look: int = 0, first_pair: int = 0) -> str:
    """Park the run on ``job_ids`` with a wake job after them. A later look of the
    sequential gate (``look``) is a park of its own (``wake-<sleep>-l<look>``); ``retry``
    on the same look (re-run evals) adds the retry suffix."""
    run = ctx.run
    extra = [f"l{look}"] if look else []
    again = run.park_look == look if look else True
    name = jobs.job_name(run.run_id, "wake", sleep, *extra) + (
        RETRY_SUFFIX if retry and again else "")
    wake = jobs.attempt_spec(ctx.settings, run.run_id, "wake", name,
                             ctx.limits.attempt_job_minutes, after_any=tuple(job_ids))
    ctx.refresh()
    wake_id = ctx.submit(wake, JobPurpose.WAKE)
    ctx.append(ev.Parked(reason=reason, job_ids=job_ids, wake_job=wake_id,
                         deadline=_deadline(minutes), seal=seal_sha, evals=evals or [], retry=retry,
                         left_out=left_out if left_out is not None else list(run.park_left_out),
                         look=look, first_pair=first_pair))
    return f"{run.run_id} parked on {len(job_ids)} job(s), wake {wake_id}"


def park_review(ctx: RunContext) -> str:
    ctx.append(ev.Parked(reason="review"))
    return f"{ctx.run.run_id} waits for review on PR #{ctx.run.pr_number}"


def end(ctx: RunContext, ending: Ending, why: str, *, by: str = "kernel",
        refusal: str | None = None, agent_note: str = "", withdrawn: str = "") -> str:
    """End the run: ``why`` is the kernel's word on it; ``agent_note`` (the agent's
    stop report) is quoted as the agent's, never folded into ``why``; ``withdrawn`` is
    the agent's reason for closing its pull request (the tick posts it and closes it)."""
    report = prompts.final_report(ctx, ending, why, agent_note)
    ctx.paths.report.write_text(report, encoding="utf-8")
    recorded, cited = book.cut(report, ctx.run.texts)
    ctx.append(ev.RunEnded(ending=ending, report=recorded, cites=cited, by=by, refusal=refusal,
                           reason=one_line(why, MAX_REASON_CHARS), withdrawn=withdrawn))
    return f"{ctx.run.run_id} ended {ending}: {why}"
