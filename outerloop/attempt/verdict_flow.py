"""From measured pairs to what the agent hears: the gate's verdict, once per
submission, then the review and publication of a credited candidate, or a wake with
the numbers; and a credited candidate whose base moved before its pull request
(``onto_new_base``, issue 48).

The tick saw the base branch move past the base the candidate was measured against and
fetched the new base into the kernel's clone (``lanes/followup.base_moved``,
``FetchBase``); this job merges the candidate onto it (``workspace.merge_onto``: objects
only, no program of the target's runs) and records the outcome once (``base_moved``):

- clean: the merge is measured again against the new base, as a new submission of the
  run under the credited submission's seeds (its pairs, looks and verdict are the gate's
  usual ones), so the pull request shows evidence against the base it merges into;
- conflicting: the agent is woken to rebase as a revision (the conflicting paths named,
  the new base in its channel as a bundle); no pull request opens for a candidate that
  conflicts. With no sleep left to revise in, the run ends saying so.

A job that dies after ``base_moved`` is followed by one that goes on from the record.
"""

from __future__ import annotations

from outerloop.attempt.context import RunContext
from outerloop.attempt.credit import give_up, publish_credited
from outerloop.attempt.exits import end
from outerloop.attempt.gate import Judgement
from outerloop.attempt.launch_flow import left_out_notes
from outerloop.attempt.looks import take_look
from outerloop.attempt.pair_flow import measured_pairs, rerun_evals, wait_for_space
from outerloop.attempt.steps import Leg, Step
from outerloop.attempt.submission import draw_seeds, measure
from outerloop.attempt.verdict_view import baseline_failure, told_view, verdict_record
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending
from outerloop.run.render import VerdictView
from outerloop.run.workspace import base_bundle, merge_onto, tree_of
from outerloop.vocabulary import GateVerdict


def wake_from_evals(ctx: RunContext, job_id: str | None) -> Step:
    """The pairs the run parked on ended: measure again what the machine spoiled, take
    the next look (more pairs, or a verdict), record the verdict once per submission;
    credited -> review and publish; else a leg with the numbers."""
    run = ctx.run
    if run.park_confirm:  # parked by an earlier version on a confirmation pair: the
        return publish_or_revise(ctx, job_id)  # submission's verdict is on record, credited
    pairs_, suite, rerun = measured_pairs(ctx)
    if rerun:
        wait_for_space(ctx, job_id, rerun)
        return rerun_evals(ctx, rerun)
    looked = take_look(ctx, pairs_, suite)
    if isinstance(looked, str):
        return looked  # more pairs submitted, parked on them
    judged: Judgement = looked
    if len(run.verdicts) < run.submissions:  # once per submission, even if this job
        # died after recording it (during the review) and a recovery wake judges again
        ctx.append(verdict_record(ctx.benchmark, judged, run))
    ctx.refresh()
    run = ctx.run
    view = told_view(ctx.benchmark, run, run.submissions)
    broken = baseline_failure(pairs_) if judged.verdict == GateVerdict.EVAL_ERROR else None
    if broken is not None:
        return end(ctx, Ending.ABORTED, broken)
    if judged.verdict != GateVerdict.IMPROVED:
        if ctx.sleeps_left() <= 0:
            return give_up(ctx, Ending.NEGATIVE_RESULT if run.pr_number is None
                           else Ending.BUDGET_EXHAUSTED,
                           f"the last submission was {judged.verdict}: {judged.detail}")
        return Leg(verdict=view, notes=left_out_notes(run))
    return publish_or_revise(ctx, job_id)


def publish_or_revise(ctx: RunContext, job_id: str | None) -> Step:
    """The current submission is credited: review it and have it published, or, when
    the review sends it back (``revision_asked``), wake the agent with the findings. A
    recovery wake finds the ask on record and only wakes the agent (no second review)."""
    run = ctx.run
    asked = run.revision
    if not (run.revising and asked is not None and asked.submission == run.submissions):
        done = publish_credited(ctx, job_id)
        if isinstance(done, str):
            return done
        ctx.refresh()
    return Leg(verdict=told_view(ctx.benchmark, ctx.run, ctx.run.submissions))


def untold_verdict(ctx: RunContext) -> VerdictView | None:
    """The latest verdict, when the leg that was to tell it died before ending (a
    recovery leg resumes the session of the last ended leg, which never saw it)."""
    run = ctx.run
    if not run.verdict_untold or not run.verdicts:
        return None
    return told_view(ctx.benchmark, run, len(run.verdicts))


def onto_new_base(ctx: RunContext) -> Step:
    """Merge the credited candidate onto the moved base (once), then measure the merge
    or wake the agent with the conflicts."""
    run = ctx.run
    moved = run.rebased
    if run.rebase_to is not None:
        assert run.publish is not None and run.branch is not None
        seal, was = run.publish.seal_sha, run.base_sha or ""
        merged, conflicts = merge_onto(ctx.paths, run.branch, run.rebase_to, seal)
        moved = ev.BaseMoved(base=run.rebase_to, was=was, seal=merged, conflicts=conflicts)
        ctx.append(moved)
        ctx.refresh()
    assert moved is not None
    if moved.conflicts:
        return _rebase_by_agent(ctx, moved)
    return _measure_again(ctx, moved)


def _measure_again(ctx: RunContext, moved: ev.BaseMoved) -> Step:
    run = ctx.run
    submission = run.submissions + 1
    tree = tree_of(ctx.paths, moved.seal)
    draw_seeds(ctx, submission, tree, "", same_as=run.seeds.get(run.submissions))
    return measure(ctx, submission, moved.seal, tree, ctx.bench_limits.eval_minutes,
                   list(run.park_left_out))


def _rebase_by_agent(ctx: RunContext, moved: ev.BaseMoved) -> Step:
    run = ctx.run
    files = ", ".join(moved.conflicts)
    if ctx.sleeps_left() <= 0:
        return end(ctx, Ending.BUDGET_EXHAUSTED, (
            f"the base moved to {moved.base[:12]} after the candidate was credited, the "
            f"candidate conflicts with it ({files}) and the run has no sleep left to "
            f"rebase in; no pull request was opened"))
    if run.park_seal is not None:
        base_bundle(ctx.paths, moved.base, run.park_seal)
    return Leg()
