"""A run's job and its model endpoint: wait rather than spend a leg on an outage.

Before a session starts (an agent's leg, or the review's judges), the job reads the
endpoint's latch as its fold shows it (its target's tick file, where the tick records
what its probes found, and its own run file): while the latch blocks
(``kernel/lanes/endpoints.blocked``), no session starts; the job records an
``endpoint_wait`` and leaves, and the tick delivers the leg again as a ``retry`` once the
endpoint may be used. A session the API refuses does the same after recording the
refusal as an ``endpoint_down`` (the latch every run on that endpoint obeys): the refused
leg counts toward none of the run's budgets, and its retry shows the agent the same
prompt again (``again_prompt``).

A seat without an endpoint (a scripted agent not bound to one) has no latch: a refusal
it rehearses ends the run ``stuck`` as an outage, as every refusal did before endpoints.
"""

from __future__ import annotations

from outerloop import clock
from outerloop.attempt.context import RunContext
from outerloop.harness.base import SessionResult
from outerloop.kernel.lanes.endpoints import PROBE, blocked, down_words
from outerloop.ledger import events as ev
from outerloop.text import one_line
from outerloop.vocabulary import JobPurpose

MAX_DETAIL_CHARS = 300
AGAIN_NOTE = ("Your previous session was cut off because the model API refused it (an "
              "outage, not your doing); outerloop waited for the API and shows you the "
              "same prompt again. Continue from the state of the workspace.")


def held(ctx: RunContext, endpoint: str | None, job_id: str | None = None) -> str | None:
    """Why no session may start on ``endpoint`` now, as this job sees it, or None. A
    ``retry`` the tick delivered for the wait is the tick's decision that a refusal's
    cooldown is over (its clock decides, not this node's); a probe that found the
    endpoint down holds every job until a probe finds it up."""
    if endpoint is None:
        return None
    latch = ctx.state.endpoints.get(endpoint)
    if latch is None or not blocked(latch, clock.now()):
        return None
    if latch.source != PROBE and _delivered_after_wait(ctx, job_id):
        return None
    return down_words(endpoint, latch)


def _delivered_after_wait(ctx: RunContext, job_id: str | None) -> bool:
    """This job is the tick's delivery of the run's leg after a wait: a ``retry``, or
    any job other than the one that recorded the wait (its registration may not be
    folded yet: a local job starts before the tick records its submission)."""
    wait_ = ctx.run.endpoint_wait
    if wait_ is not None and job_id is not None and wait_.job_id != job_id:
        return True
    job = ctx.state.jobs.get(job_id or "")
    return job is not None and job.purpose == JobPurpose.RETRY


class ReviewWaits(Exception):
    """The judges' endpoint is down and the review may still wait (``[review]
    wait_hours``): the panel is run again when it is back, instead of degrading."""

    def __init__(self, endpoint: str, why: str) -> None:
        super().__init__(why)
        self.endpoint, self.why = endpoint, why


def review_waited_since(ctx: RunContext) -> str | None:
    """When this submission's review began waiting for its judges' endpoint (None: it
    has not waited)."""
    wait_ = ctx.run.endpoint_wait
    if wait_ is None or not wait_.review or wait_.submission != ctx.run.submissions:
        return None
    return wait_.since or None


def review_may_wait(ctx: RunContext) -> bool:
    """Within ``[review] wait_hours`` of the review's first wait (or not waited yet)."""
    since = review_waited_since(ctx)
    if since is None:
        return ctx.settings.review.wait_hours > 0
    waited_h = (clock.now() - clock.parse_stamp(since)).total_seconds() / 3600
    return waited_h < ctx.settings.review.wait_hours


def wait(ctx: RunContext, job_id: str | None, endpoint: str, why: str, *,
         review: bool = False) -> str:
    """Record that the run waits on ``endpoint``; the job then leaves."""
    since = (review_waited_since(ctx) or clock.now_stamp()) if review else ""
    ctx.append(ev.EndpointWait(endpoint=endpoint, job_id=job_id, review=review,
                               detail=one_line(why, MAX_DETAIL_CHARS),
                               submission=ctx.run.submissions if review else 0,
                               since=since))
    what = "its review" if review else "its next leg"
    return f"{ctx.run.run_id}: {what} waits for model endpoint {endpoint}: {why}"


def refused(ctx: RunContext, job_id: str | None, endpoint: str, result: SessionResult, *,
            source: str = "leg") -> str:
    """The API refused a session on ``endpoint``: set its latch, and wait."""
    detail = one_line(result.error_detail or "", MAX_DETAIL_CHARS)
    ctx.append(ev.EndpointDown(endpoint=endpoint, source=source, refusal=result.refusal,
                               detail=detail))
    return wait(ctx, job_id, endpoint, f"the model API refused the session "
                f"({result.refusal or 'outage'}): {detail}", review=source == "judge")
