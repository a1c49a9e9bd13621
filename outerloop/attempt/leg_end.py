"""After an agent session: what it committed, recorded, and what the job does next.

The committed request is read from the channel (refused whole when it carries a known
secret value) and recorded with the leg's ``LegEnded``; a session the model API
refused waits on its endpoint (or ends the run stuck without one); a session that ran
out of turns without handing over ends the run; else the job acts on the request.
"""

from __future__ import annotations

from outerloop.attempt import endpoint_gate, prompts
from outerloop.attempt.channel import ChannelError, CommittedRequest
from outerloop.attempt.context import RunContext
from outerloop.attempt.credit import give_up
from outerloop.attempt.line_save import save_on_line
from outerloop.attempt.steps import Act, Step
from outerloop.harness.base import SessionResult
from outerloop.harness.evidence import save_evidence
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending
from outerloop.sandbox.secrets import known_secrets, refusal_note, secrets_in
from outerloop.text import redact


def end_leg(ctx: RunContext, job_id: str | None, number: int, endpoint: str | None,
            result: SessionResult, delivered: list[str]) -> Step:
    """Record leg ``number``'s end and its request; the job's next step."""
    from outerloop.attempt.channel import read_committed

    run = ctx.run
    secrets = known_secrets(ctx.settings)  # read again: a key may have changed meanwhile
    save_evidence(ctx.paths.legs, number, result, secrets, ctx.paths.home)
    request: CommittedRequest | None = None
    error: str | None = None
    try:
        request = read_committed(ctx.paths.ws, limits=prompts.channel_limits(ctx),
                                 used_names=[x.name for x in run.launches])
    except ChannelError as exc:
        error = str(exc)
    if request is not None and secrets_in(request.model_dump(mode="json"), secrets):
        request, error = None, refusal_note(["your staged request (its report, messages or "
                                             "launches)"])
        ctx.append(ev.Note(level="warning", text="the agent's staged request carried a "
                           "secret value; refused, nothing of it recorded"))
    ctx.append(ev.LegEnded(leg=number, stop_reason=result.stop_reason,
                           is_error=result.is_error, session_id=result.session_id,
                           cost_usd=result.cost_usd, turns=result.turns,
                           progress=request is not None,
                           request=request.model_dump(mode="json") if request is not None else None,
                           error=redact(error or result.error_detail or "", secrets) or None,
                           delivered=delivered))
    save_on_line(ctx, number)  # the hand-over, memory included, on the research line
    if result.outage and endpoint is not None:
        return endpoint_gate.refused(ctx, job_id, endpoint, result)
    if result.outage:
        return give_up(ctx, Ending.STUCK,
                       f"the model API refused the session ({result.refusal}): "
                       f"{result.error_detail}", by="outage", refusal=result.refusal)
    if result.stop_reason == "max_turns" and request is None:
        return give_up(ctx, Ending.BUDGET_EXHAUSTED, "the session ran out of turns before "
                       "it handed over with `sleep` or `stop`")
    ctx.refresh()
    return Act()
