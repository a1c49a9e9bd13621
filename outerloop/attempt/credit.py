"""From a credited verdict to a pull request: the review, then the publish request.

A credited submission has already been measured in at least three fresh pair jobs from
its sealed commit, each with its own hidden seed (the sequential test of
``attempt/looks.py`` is the reproduction: no credit rests on one lucky job). The review
(tamper check, report check, judges) follows. A blocking finding sends the candidate
back to its agent first (``revision_asked``, at most ``[review] revisions`` times, before
any PR): the agent revises and submits again, measured and reviewed like any
submission. A draft opens only when it cannot: its last revision is still blocked, or
it stops or runs out (``publish_blocked``: the blocked candidate, as recorded).
"""

from __future__ import annotations

from decimal import Decimal

import msgspec

from outerloop.attempt import endpoint_gate, prompts
from outerloop.attempt.context import RunContext
from outerloop.attempt.cost_view import cost_view
from outerloop.attempt.exits import end
from outerloop.attempt.panel import ReviewOutcome, review_candidate
from outerloop.attempt.results import experiment_rows
from outerloop.attempt.verdict_view import told_view
from outerloop.config import Settings
from outerloop.ledger import book
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, RunRecord
from outerloop.run.number_words import decimal_or_none, pr_title
from outerloop.run.render import (
    AlphaView,
    PrInputs,
    VerdictView,
    render_pr_body,
)
from outerloop.run.workspace import changed_paths


def publish_credited(ctx: RunContext,
                     job_id: str | None = None) -> str | ev.RevisionAsked:
    """The submission is credited (its verdict on record): review it, then ask the tick
    to publish it; or, when the review blocks it and the agent may still revise
    (``may_revise``), record the ask (``revision_asked``) and return it: the caller wakes
    the agent with the findings; or leave the run waiting for its judges' endpoint."""
    run = ctx.run
    told = run.verdicts[-1]
    baseline, candidate = decimal_or_none(told.baseline), decimal_or_none(told.candidate)
    view = told_view(ctx.benchmark, run, len(run.verdicts))
    assert baseline is not None and candidate is not None
    try:
        review = review_candidate(ctx, view, job_id)
    except endpoint_gate.ReviewWaits as waiting:
        return endpoint_gate.wait(ctx, job_id, waiting.endpoint, waiting.why, review=True)
    if may_revise(ctx, review):
        rounds = ctx.settings.review.revisions
        draft = publication(ctx, view, baseline, candidate, review,
                            revision_note(run.revisions + 1, rounds, asked=True))
        asked = ev.RevisionAsked(submission=run.submissions, round=run.revisions + 1,
                                 findings=[f.as_recorded() for f in review.findings],
                                 draft=draft)
        ctx.append(asked)
        return asked
    note = revision_note(run.revisions, ctx.settings.review.revisions) if run.revisions else ""
    ready = publication(ctx, view, baseline, candidate, review, note)
    ctx.append(ready)
    how = "a draft" if review.draft else "ready"
    return (f"{run.run_id} credited ({view.baseline} -> {view.candidate}); the tick "
            f"publishes it as {how} ({len(review.findings)} findings)")


def may_revise(ctx: RunContext, review: ReviewOutcome) -> bool:
    """The review blocks the candidate (a blocking finding: a degraded panel alone is
    nothing the agent can fix), no PR is open yet, a revision round is left under
    ``[review] revisions`` and the run has a sleep left to submit it with."""
    run = ctx.run
    return any(f.blocking for f in review.findings) and run.pr_number is None \
        and run.revisions < ctx.settings.review.revisions and ctx.sleeps_left() > 0


def revision_note(round_: int, rounds: int, *, asked: bool = False) -> str:
    """What the PR's Review section says of the revision rounds (kernel text)."""
    if asked:
        return (f"The review blocked this candidate and outerloop sent its findings back "
                f"to the agent to revise (round {round_} of {rounds}, `[review] revisions`); "
                f"no revision cleared the review, so this draft shows the blocked candidate.")
    return (f"This candidate is a revision: the review blocked an earlier submission of "
            f"this run and outerloop sent its findings back to the agent ({round_} of "
            f"{rounds} revision round{'s' if rounds != 1 else ''}).")


def publication(ctx: RunContext, view: VerdictView, baseline: Decimal, candidate: Decimal,
                review: ReviewOutcome, note: str = "") -> ev.PublishReady:
    """The ``publish_ready`` of the run's sealed candidate, as reviewed."""
    run = ctx.run
    assert run.park_seal is not None and run.branch is not None
    rows = experiment_rows(ctx)
    report = prompts.load_report(ctx)
    body = render_pr_body(PrInputs(
        run_id=run.run_id, agent=run.agent, benchmark=run.benchmark, issue_number=run.issue,
        closes_issue=closes_issue(ctx.settings, run.target),
        report=report, verdict=view, seeds=view.seeds,
        base_sha=run.base_sha or "", seal_sha=run.park_seal,
        experiments=rows, findings=review.findings, degraded=review.degraded,
        draft=review.draft, revision_note=note, budget=budget_view(run),
        cost=cost_view(ctx), base_note=base_note(run), supersedes=list(run.combines)))
    title = pr_title(run.agent, run.benchmark, baseline, candidate,
                     ctx.benchmark.display_digits, report)
    ready = ev.PublishReady(seal_sha=run.park_seal, branch=run.branch, title=title,
                            body=body, report=report, experiments=rows, draft=review.draft,
                            degraded=review.degraded,
                            findings=[f.as_recorded() for f in review.findings],
                            paths=sorted(changed_paths(ctx.paths, run.base_sha or "",
                                                       run.park_seal)))
    start = body.find(report) if report else -1
    if start >= 0:  # the body holds the report: recorded once, where it is in the body
        ready = msgspec.structs.replace(ready, report="", report_at=(start, start + len(report)))
    recorded, cited = book.cut(ready.body, book.with_findings(run.texts, ready))
    return msgspec.structs.replace(ready, body=recorded, cites=cited)


def closes_issue(settings: Settings, target: str) -> bool:
    """Whether the target's PRs close their issue on merge (``[[targets]] close_issue``)."""
    return next((t.close_issue for t in settings.targets if t.repo == target), True)


def base_note(run: RunRecord) -> str:
    """What the PR says when its candidate is the credited one merged onto a base that
    moved (``base_moved``), measured again against it (the numbers above)."""
    moved = run.rebased
    if moved is None or not moved.seal or moved.seal != run.park_seal:
        return ""
    return (f"the base branch moved from `{moved.was[:12]}` to `{moved.base[:12]}` after "
            f"an earlier submission of this run was credited; the candidate was merged "
            f"onto the new base (no conflict) and the numbers above are that merge "
            f"measured again against the new base, under the same seeds")


def budget_view(run: RunRecord) -> AlphaView | None:
    """The run's share of its target's false-credit budget, as the PR shows it."""
    fixed = run.alpha_fixed
    if fixed is None:
        return None
    return AlphaView(alpha=f"{fixed.alpha:.3g}", budget=f"{fixed.budget:.3g}",
                      index=fixed.index, held=f"{fixed.held:.3g}")


def publish_blocked(ctx: RunContext, why: str) -> str:
    """The agent cannot revise (``why``): the blocked candidate the review sent back
    opens as the draft recorded with the ask."""
    asked = ctx.run.revision
    assert asked is not None
    ctx.append(ev.Note(level="info", text=f"{ctx.run.run_id}: {why}; the blocked "
                       f"submission {asked.submission} opens as a draft"))
    ctx.append(asked.draft)
    return (f"{ctx.run.run_id}: {why}; the tick publishes submission {asked.submission} "
            f"as a draft ({len(asked.findings)} findings)")


def give_up(ctx: RunContext, ending: Ending, why: str, *, by: str = "kernel",
            refusal: str | None = None, agent_note: str = "") -> str:
    """The run cannot go on (``why``): it ends, unless it was revising a candidate the
    review blocked; then that candidate opens as a draft PR carrying the findings (the
    work measured and credited is not lost), and the run waits in review."""
    if ctx.run.revising:
        key = f"{ctx.run.run_id}-leg{ctx.run.legs}-gave-up"
        if agent_note.strip() and key not in ctx.run.outbox:  # its words on why: posted
            ctx.append(ev.Outbox(key=key, text=agent_note))  # (quoted as the agent's)
        return publish_blocked(ctx, why)
    return end(ctx, ending, why, by=by, refusal=refusal, agent_note=agent_note)
