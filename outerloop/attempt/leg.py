"""One agent session leg: its prompt rendered and saved, the harness run confined with
the channel watched, then its end recorded (``leg_end``). The job's loop
(``session.drive``) runs a leg whenever a step says ``Leg``."""

from __future__ import annotations

from outerloop.attempt.context import RunContext
from outerloop.attempt.credit import give_up
from outerloop.attempt.leg_end import end_leg
from outerloop.attempt.leg_gates import cli_on_node, leg_held
from outerloop.attempt.leg_prompt import leg_prompt
from outerloop.attempt.refusals import refusal_gist
from outerloop.attempt.steps import Leg, Step
from outerloop.fleet import seat_of
from outerloop.harness.base import SessionLimits
from outerloop.harness.evidence import save_prompt
from outerloop.harness.factory import make_harness
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending
from outerloop.sandbox import reaper
from outerloop.sandbox.secrets import known_secrets

MAX_LEGS_PER_JOB = 10
"""Agent legs one job (a climb, wake or recovery job) runs at most. A job parks after a
leg whose request it acts on; only refusals (or sessions that hand over nothing) make
it run another, so an honest job runs a few; the next one past this ends the run
(``session.drive``; docs/contract.md)."""


def run_leg(ctx: RunContext, job_id: str | None, step: Leg) -> Step:
    """Run the leg ``step`` asks for; the job's next step. The prompt of a wake carries
    the reviewer feedback not yet delivered; its leg's ``LegEnded`` marks it delivered
    (see ``ev.LegEnded.delivered``)."""
    from outerloop.attempt.live import watcher_for

    run = ctx.run
    site = ctx.deps_site()  # before the leg is recorded: a cold cache makes the run wait
    seat = seat_of(ctx.settings, run.target, run.agent)
    cli_on_node(seat)  # before the leg is recorded: a missing CLI makes the run wait
    held = leg_held(ctx, job_id, seat)
    if held is not None:
        return held
    number = run.legs + 1
    prompt = leg_prompt(ctx, step, number, job_id)
    save_prompt(ctx.paths.legs, number, prompt.text, known_secrets(ctx.settings))
    ctx.append(ev.LegStarted(leg=number, role="climb" if prompt.fresh else "wake",
                             job_id=job_id, refused=refusal_gist(list(step.notes)),
                             endpoint=seat.endpoint or ""))
    harness = make_harness(ctx.settings, seat, deps=site)
    limits = SessionLimits(max_turns=ctx.limits.session_max_turns,
                           minutes=ctx.limits.session_minutes)
    only = None if ctx.contract.channels.siblings else run.run_id
    # Leaving tree_ends kills what the session left (after the watcher stopped): the
    # channel, the evidence and the seal are read only once the leg's tree is dead.
    with reaper.tree_ends(), watcher_for(ctx.settings, ctx.paths.ws, run.target, only):
        result = harness.run(prompt.text, ctx.paths.ws, ctx.paths.home, run.session_id,
                             limits)
    return end_leg(ctx, job_id, number, seat.endpoint, result, prompt.delivered)


def leg_ceiling(ctx: RunContext, step: Leg) -> str:
    """The job ran its ``MAX_LEGS_PER_JOB`` legs and would run another: every leg of it
    ended in a request the kernel refused (or none), each a paid session. The run ends
    (``budget-exhausted``) with the kernel's latest refusal named; a run revising a
    blocked candidate opens it as a draft instead (``give_up``)."""
    latest = refusal_gist(list(step.notes)) or ctx.run.refused
    return give_up(ctx, Ending.BUDGET_EXHAUSTED,
                   f"one job ran {MAX_LEGS_PER_JOB} agent legs without the run waiting on "
                   f"anything (at most {MAX_LEGS_PER_JOB} per job)"
                   + (f"; outerloop's latest refusal: {latest}" if latest else ""))
