"""What the kernel does with the request an agent leg committed: ``stop`` (ending, or
parking in review; ``--withdraw`` closing the PR), ``submit`` (the gate), launches
(experiments), messages (posted on the issue's thread, or noted); a leg that ended
without handing over is resumed with a note, at most ``MAX_IMMEDIATE_RESUMES`` times; a
``sleep`` with nothing staged is refused with a note, and the
``MAX_EMPTY_SLEEPS_IN_A_ROW``-th in a row ends the run."""

from __future__ import annotations

from outerloop.attempt.channel import CommittedRequest
from outerloop.attempt.context import RunContext
from outerloop.attempt.credit import give_up
from outerloop.attempt.exits import end, park_review
from outerloop.attempt.launch_flow import launch_experiments
from outerloop.attempt.steps import Leg, RequestRefused, Step
from outerloop.attempt.submission import submit_candidate
from outerloop.harness.needs import broken_environment
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending

MAX_IMMEDIATE_RESUMES = 2
MAX_EMPTY_SLEEPS_IN_A_ROW = 3
"""``sleep`` with nothing staged this many times in a row ends the run
(``_empty_sleep``); the ones before are refused with a note (docs/contract.md)."""


def act_on_request(ctx: RunContext, job_id: str | None) -> Step:
    """Act on the last leg's committed request (idempotent: re-running it after a
    crash submits nothing twice). A refusal raised by any rule becomes the next leg,
    its note told to the agent."""
    try:
        return _act(ctx, job_id)
    except RequestRefused as refusal:
        return Leg(notes=(refusal.note,))


def _act(ctx: RunContext, job_id: str | None) -> Step:
    run = ctx.run
    raw = run.pending_request or None
    error = run.pending_error
    if not raw:
        # In review, a leg that ended cleanly without a request means "nothing to add":
        # park. One that failed (its session killed, a request the tool refused) is
        # resumed with a note first, so a reviewer's words are not left unanswered. In
        # review nothing here ends the run: its credited PR stands, and only new
        # feedback wakes it again (``empty_legs`` counts across wakes, so ending on it
        # lost a credited win after three quiet answers: test_review_quiet_agent).
        resume = error is not None and run.empty_legs <= MAX_IMMEDIATE_RESUMES - 1
        if run.pr_number is not None and not resume:
            return park_review(ctx)
        if run.empty_legs > MAX_IMMEDIATE_RESUMES - 1:
            broken = broken_environment(ctx.settings)
            if broken:
                return end(ctx, Ending.ABORTED, broken)
            return give_up(ctx, Ending.NEGATIVE_RESULT,
                           "the agent ended its sessions without handing over (`sleep` or "
                           "`stop`)"
                           + (f", after outerloop's last refusal ({run.refused})"
                              if run.refused else "")
                           + (f"; last problem: {error}" if error else ""))
        note = error or ("You ended the session without `sleep` or `stop`. Stage your next "
                         "step with the tool and hand over with `sleep`, or `stop`.")
        return Leg(notes=(note,))
    request = CommittedRequest.model_validate(raw)
    _record_messages(ctx, request)
    if request.verb == "stop" and request.withdraw is not None:
        return _withdraw(ctx, request)
    if request.verb == "stop":
        if run.pr_number is not None:
            return park_review(ctx)
        return give_up(ctx, Ending.NEGATIVE_RESULT, "the agent stopped",
                       agent_note=request.stop_report or "")
    if request.submit is not None:
        return submit_candidate(ctx, request)
    if request.launches:
        return launch_experiments(ctx, request)
    if run.pr_number is not None:
        return park_review(ctx)
    return _empty_sleep(ctx)


def _empty_sleep(ctx: RunContext) -> Step:
    """``sleep`` with nothing staged: nothing to wait on, so the next leg would start at
    once, a paid session each. The agent is told; the ``MAX_EMPTY_SLEEPS_IN_A_ROW``-th in
    a row (``RunRecord.empty_sleeps``: a leg that stages a launch or a submission starts
    the count again) ends the run with that reason."""
    count = ctx.run.empty_sleeps
    if count >= MAX_EMPTY_SLEEPS_IN_A_ROW:
        return give_up(ctx, Ending.NEGATIVE_RESULT,
                       f"the agent called `sleep` with nothing staged {count} times in a "
                       f"row (at most {MAX_EMPTY_SLEEPS_IN_A_ROW}: each is an agent session "
                       f"that starts at once)")
    left = MAX_EMPTY_SLEEPS_IN_A_ROW - count
    raise RequestRefused(
        f"Refused: you called `sleep` with nothing staged, so there is nothing to wait "
        f"for. Stage launches or a submission first, or `stop`. {left} more `sleep` with "
        f"nothing staged in a row end{'s' if left == 1 else ''} the run.")


def _withdraw(ctx: RunContext, request: CommittedRequest) -> str:
    """``stop --withdraw REASON``: the run ends ``withdrawn``; the tick posts the reason
    (fenced, as the agent's) on the pull request and closes it (``lanes/followup``)."""
    assert request.withdraw is not None
    number = ctx.run.pr_number
    if number is None:
        raise RequestRefused(
            "Refused: `stop --withdraw` closes the run's pull request, and this run has "
            "none. End the attempt with `stop` instead; nothing was ended.")
    return end(ctx, Ending.WITHDRAWN, f"the agent withdrew pull request #{number}",
               agent_note=request.stop_report or request.withdraw,
               withdrawn=request.withdraw)


def _record_messages(ctx: RunContext, request: CommittedRequest) -> None:
    for index, message in enumerate(request.messages):
        key = f"{ctx.run.run_id}-leg{ctx.run.legs}-m{index}"
        if message.to == "thread" and not ctx.contract.channels.messages:
            ctx.append(ev.Note(level="info", text=f"agent message not posted "
                               f"(channels.messages is off): {message.text[:2000]}"))
        elif message.to == "thread":
            if key not in ctx.run.outbox:
                ctx.append(ev.Outbox(key=key, text=message.text))
        else:
            ctx.append(ev.Note(level="info", text=f"agent note: {message.text[:2000]}"))
    if request.messages:
        ctx.refresh()
