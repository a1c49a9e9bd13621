"""From a credited verdict to a pull request: the review, then the publish request.

A credited submission has already been measured in at least three fresh pair jobs from
its sealed commit, each with its own hidden seed (the sequential test of
``attempt/looks.py`` is the reproduction: no credit rests on one lucky job). The review
(tamper check, judges) follows; its findings make the PR a draft.
"""

from __future__ import annotations

from decimal import Decimal

from outerloop.attempt import endpoint_gate, prompts
from outerloop.attempt.context import RunContext
from outerloop.attempt.panel import ReviewOutcome, review_candidate
from outerloop.attempt.render import (
    PrInputs,
    VerdictView,
    pr_title,
    render_pr_body,
)
from outerloop.attempt.results import experiment_rows
from outerloop.attempt.verdict_view import judgement_of, told_view
from outerloop.ledger import events as ev


def publish_credited(ctx: RunContext, job_id: str | None = None) -> str:
    """The submission is credited (its verdict on record): review it, then ask the tick
    to publish it; or leave the run waiting for its judges' endpoint."""
    run = ctx.run
    told = run.verdicts[-1]
    credited = judgement_of(told)
    view = told_view(ctx.benchmark, run, len(run.verdicts))
    assert credited.baseline is not None and credited.candidate is not None
    try:
        review = review_candidate(ctx, view, job_id)
    except endpoint_gate.ReviewWaits as waiting:
        return endpoint_gate.wait(ctx, job_id, waiting.endpoint, waiting.why, review=True)
    return ready_to_publish(ctx, view, credited.baseline, credited.candidate, review)


def ready_to_publish(ctx: RunContext, view: VerdictView, baseline: Decimal,
                     candidate: Decimal, review: ReviewOutcome) -> str:
    run = ctx.run
    assert run.park_seal is not None and run.branch is not None
    rows = experiment_rows(ctx)
    report = prompts.load_report(ctx)
    body = render_pr_body(PrInputs(
        run_id=run.run_id, agent=run.agent, benchmark=run.benchmark, issue_number=run.issue,
        report=report, verdict=view, seeds=view.seeds,
        base_sha=run.base_sha or "", seal_sha=run.park_seal,
        experiments=rows, findings=review.findings, degraded=review.degraded,
        draft=review.draft))
    title = pr_title(run.agent, run.benchmark, baseline, candidate,
                     ctx.benchmark.display_digits)
    ctx.append(ev.PublishReady(seal_sha=run.park_seal, branch=run.branch, title=title,
                               body=body, report=report, experiments=rows,
                               draft=review.draft, degraded=review.degraded,
                               findings=[f.as_recorded() for f in review.findings]))
    how = "a draft" if review.draft else "ready"
    return (f"{run.run_id} credited ({view.baseline} -> {view.candidate}); the tick "
            f"publishes it as {how} ({len(review.findings)} findings)")
