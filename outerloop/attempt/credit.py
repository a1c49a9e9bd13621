"""From a credited verdict to a pull request: the confirmation pair, the review, the
publish request.

A credited submission is measured once more before anything is published: one more
pair job from the sealed commit, with a fresh hidden seed (``pairs.confirm_seed``),
fresh checkouts and nothing carried over. The review (tamper check, judges) follows;
a confirmation that does not credit the candidate adds a blocking finding, so the PR
opens as a draft saying so, and the agent is told at its next leg (a ``Feedback``
from "outerloop gate" the followup lane delivers like a reviewer's).
"""

from __future__ import annotations

from decimal import Decimal

from outerloop.attempt import pairs, prompts
from outerloop.attempt.context import RunContext
from outerloop.attempt.exits import end, park_on
from outerloop.attempt.gate import IMPROVED, Side, judge
from outerloop.attempt.pair_flow import job_name_of, submission_salt, submit_pair
from outerloop.attempt.panel import ReviewOutcome, review_candidate
from outerloop.attempt.render import (
    PR_TITLE_MIN_DIGITS,
    PrInputs,
    VerdictView,
    format_metric,
    pr_title,
    render_pr_body,
)
from outerloop.attempt.results import experiment_rows
from outerloop.attempt.verdict_view import (
    DEFAULT_DIGITS,
    judgement_of,
    not_reproduced,
    not_reproduced_note,
    verdict_view,
)
from outerloop.ledger import events as ev
from outerloop.ledger.records import Ending


def confirm(ctx: RunContext) -> str:
    """Credited: measure the sealed commit once more, in a fresh pair job with a fresh
    hidden seed, before anything is published."""
    run = ctx.run
    assert run.base_sha is not None and run.park_seal is not None
    salt = submission_salt(run, run.submissions)
    # the submission's own limit (`submit --minutes` may have shortened it)
    own = [p for p in run.park_evals if p.bench is None]
    plan = pairs.read_plan(ctx.paths, job_name_of(ctx, own[0].base)) if own else None
    minutes = plan.minutes if plan is not None else ctx.bench_limits.eval_minutes
    pair = submit_pair(ctx, pairs.pair_name(run.run_id, salt, pairs.CONFIRM_LABEL, 0),
                       ctx.benchmark, pairs.confirm_seed(salt), minutes,
                       pairs.base_first(salt, pairs.CONFIRM_LABEL, 0), run.base_sha,
                       run.park_seal)
    if pair is None:
        return end(ctx, Ending.ABORTED, "the confirmation eval job could not be submitted")
    return park_on(ctx, "eval", [pair.base], run.sleeps, seal_sha=run.park_seal,
                   minutes=minutes * 2, evals=[pair], retry=True, confirm=True)


def wake_from_confirmation(ctx: RunContext, measured: list[tuple[Side, Side]]) -> str:
    run = ctx.run
    told = run.verdicts[-1]
    credited = judgement_of(told)
    again = judge(ctx.benchmark, measured)
    reproduced = again.verdict == IMPROVED
    if run.submissions not in run.confirmations:
        ctx.append(ev.Confirmation(
            submission=run.submissions, reproduced=reproduced,
            baseline=str(again.baseline) if again.baseline is not None else None,
            candidate=str(again.candidate) if again.candidate is not None else None,
            delta=str(again.delta) if again.delta is not None else None,
            detail=again.detail))
        ctx.refresh()
    view = verdict_view(ctx.benchmark, credited, told.seeds)
    assert credited.baseline is not None and credited.candidate is not None
    review = review_candidate(ctx, view)
    if not reproduced:
        review = review.with_finding(not_reproduced(again))
    return ready_to_publish(ctx, view, credited.baseline, credited.candidate, review,
                            tell_agent=None if reproduced else not_reproduced_note(again))


def ready_to_publish(ctx: RunContext, view: VerdictView, baseline: Decimal,
                     candidate: Decimal, review: ReviewOutcome, *,
                     tell_agent: str | None = None) -> str:
    run = ctx.run
    assert run.park_seal is not None and run.branch is not None
    rows = experiment_rows(ctx)
    report = prompts.load_report(ctx)
    body = render_pr_body(PrInputs(
        run_id=run.run_id, agent=run.agent, benchmark=run.benchmark, issue_number=run.issue,
        report=report, verdict=view, seeds=view.seeds,
        base_sha=run.base_sha or "", seal_sha=run.park_seal,
        experiments=rows, findings=review.findings, degraded=review.degraded,
        draft=review.draft, confirmation=_confirmed(ctx)))
    title = pr_title(run.agent, run.benchmark, baseline, candidate,
                     ctx.benchmark.display_digits or PR_TITLE_MIN_DIGITS)
    if tell_agent is not None and f"confirm-{run.submissions}" not in run.feedback:
        ctx.append(ev.Feedback(source_id=f"confirm-{run.submissions}", author="outerloop gate",
                               text=tell_agent, source_kind="confirmation of your submission"))
    ctx.append(ev.PublishReady(seal_sha=run.park_seal, branch=run.branch, title=title,
                               body=body, report=report, experiments=rows,
                               draft=review.draft, degraded=review.degraded,
                               findings=[f.as_recorded() for f in review.findings]))
    how = "a draft" if review.draft else "ready"
    return (f"{run.run_id} credited ({view.baseline} -> {view.candidate}); the tick "
            f"publishes it as {how} ({len(review.findings)} findings)")


def _confirmed(ctx: RunContext) -> str:
    """The confirmation pair's numbers as the PR body states them, or ""."""
    confirmation = ctx.run.confirmations.get(ctx.run.submissions)
    if confirmation is None:
        return ""
    if confirmation.baseline is None or confirmation.candidate is None:
        return f"not measured ({confirmation.detail})"
    digits = ctx.benchmark.display_digits or DEFAULT_DIGITS
    base, cand = (format_metric(Decimal(v), digits)
                  for v in (confirmation.baseline, confirmation.candidate))
    how = "reproduced" if confirmation.reproduced else "did not reproduce"
    return f"baseline `{base}`, candidate `{cand}`: {how}"
