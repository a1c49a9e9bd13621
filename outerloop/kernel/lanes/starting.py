"""A run's start when the machine fails it: backoff, one word on the issue, no claim.

A run that never started through no fault of the agent (its workspace could not be
prepared: the forge's git failed, the disk is full; its climb job's submission failed;
or its climb job died of the machine, ``node_fail`` or ``interrupted``, before the
first leg) never costs its issue a claim: it stays queued and is started again, the
retry after the n-th failure waiting ``retry_delay_s(n)``: ``START_RETRY_FIRST_S``
doubling up to ``START_RETRY_MAX_S`` (an hour). A tick's timer spaces the retries
anyway; the backoff matters when ticks come fast or the outage is long.

The issue is told once (``delay_comment``, marker-keyed) that the start is delayed, in
words holding no operator detail; ``status`` shows the error itself. A start still
failing after ``STALLED_AFTER_S`` is named in every tick's notes, with the fix; it is
never given up silently (the operator fixes the cause, or ends the run: ``outerloop
end``). Pure: admission and the sweep plan with it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from outerloop import infra
from outerloop.clock import parse_stamp, stamp
from outerloop.kernel.actions import PostComment
from outerloop.ledger.state import RunRecord
from outerloop.retry_rule import backoff_s

START_RETRY_FIRST_S = 10
START_RETRY_MAX_S = 3600
STALLED_AFTER_S = 3600
DELAY_MARKER = "start-delayed"
DEPLOYMENT_WORDS = ("the cluster outerloop runs on cannot run its jobs as configured "
                    "(the operator is told what and how to fix it)")
"""What the issue is told of a start the deployment stopped (never its detail)."""


def retry_delay_s(failures: int) -> int:
    """How long a start waits after its ``failures``-th failure (0: none yet)."""
    return int(backoff_s(failures, START_RETRY_FIRST_S, START_RETRY_MAX_S))


def retry_at(failures: int, last_failed_at: str) -> datetime | None:
    """When the start may be tried again (None: at once)."""
    if failures <= 0 or not last_failed_at:
        return None
    return parse_stamp(last_failed_at) + timedelta(seconds=retry_delay_s(failures))


def may_start(run: RunRecord, now: datetime) -> bool:
    """Whether admission may try to start ``run`` now (its backoff has passed)."""
    due = retry_at(run.start_failures, run.start_failed_at)
    return due is None or now >= due


def public_reason(error: str) -> str:
    """Why a start failed, for the issue: the kind of trouble, never its detail (paths,
    hosts and the forge's own words are the operator's)."""
    lowered = error.lower()
    if infra.refused_fix(error) is not None:
        return DEPLOYMENT_WORDS
    if "no space left" in lowered or "quota" in lowered:
        return "the disk outerloop works on is full"
    if "workspace" in lowered or "git" in lowered or "forge" in lowered:
        return "the target's code could not be fetched from the forge"
    return "the machine outerloop runs on failed it"


def delay_comment(run: RunRecord, reason: str) -> PostComment | None:
    """The one comment telling the issue that its run's start is delayed (None: the
    run has no issue)."""
    if run.issue is None:
        return None
    return PostComment(
        target=run.target, run=run.run_id, number=run.issue, marker_kind="status",
        marker_key=f"{DELAY_MARKER}-{run.run_id}",
        body=(f"outerloop's start of run `{run.run_id}` is delayed: {reason}. This is not "
              f"the issue's fault and costs it no claim; the start is retried by itself "
              f"(backing off up to once an hour) and the run's report will be posted "
              f"here. Nothing needs to change on the issue."))


def waiting_words(failures: int, since: str, last_failed_at: str, error: str,
                  now: datetime) -> str:
    """What ``status`` says of a run whose start failed ``failures`` times."""
    due = retry_at(failures, last_failed_at)
    when = "at the next tick" if due is None or due <= now else f"after {stamp(due)}"
    hours = (now - parse_stamp(since)).total_seconds() / 3600 if since else 0.0
    fix = infra.refused_fix(error)
    return (f"its start failed {failures} time(s) over {hours:.1f} h (the machine's "
            f"failure, not the agent's: no claim is spent); retried {when}; last error: "
            f"{error[:300]}" + (f"; {fix}" if fix else ""))


def stalled_note(run: RunRecord, now: datetime) -> str | None:
    """The tick's note about a run whose start has failed for over ``STALLED_AFTER_S``."""
    if not run.start_failures or not run.start_failed_since or (
            now - parse_stamp(run.start_failed_since)).total_seconds() < STALLED_AFTER_S:
        return None
    words = waiting_words(run.start_failures, run.start_failed_since, run.start_failed_at,
                          run.start_error, now)
    return (f"run {run.run_id} ({run.target}#{run.issue}) has not started: {words}; fix: "
            f"repair the cause (the forge's git, the disk, the scheduler) and it starts by "
            f"itself, or `outerloop end {run.run_id} --reason ...` to give it up")
