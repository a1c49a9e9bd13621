"""One agent session leg: its prompt rendered and saved, the harness run confined with
the channel watched, then its end recorded (``leg_end``). The job's loop
(``session.drive``) runs a leg whenever a step says ``Leg``."""

from __future__ import annotations

from outerloop.attempt.context import RunContext
from outerloop.attempt.leg_end import end_leg
from outerloop.attempt.leg_gates import leg_held
from outerloop.attempt.leg_prompt import leg_prompt
from outerloop.attempt.refusals import refusal_gist
from outerloop.attempt.steps import Leg, Step
from outerloop.fleet import seat_of
from outerloop.harness.base import SessionLimits
from outerloop.harness.evidence import save_prompt
from outerloop.harness.factory import make_harness
from outerloop.ledger import events as ev
from outerloop.sandbox import reaper
from outerloop.sandbox.secrets import known_secrets


def run_leg(ctx: RunContext, job_id: str | None, step: Leg) -> Step:
    """Run the leg ``step`` asks for; the job's next step. The prompt of a wake carries
    the reviewer feedback not yet delivered; its leg's ``LegEnded`` marks it delivered
    (see ``ev.LegEnded.delivered``)."""
    from outerloop.attempt.live import watcher_for

    run = ctx.run
    site = ctx.deps_site()  # before the leg is recorded: a cold cache makes the run wait
    seat = seat_of(ctx.settings, run.target, run.agent)
    held = leg_held(ctx, job_id, seat)
    if held is not None:
        return held
    number = run.legs + 1
    prompt = leg_prompt(ctx, step, number)
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
