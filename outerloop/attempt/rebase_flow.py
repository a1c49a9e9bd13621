"""A credited candidate whose base moved before its pull request (issue 48).

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

A job that dies after ``base_moved`` is followed by one that goes on from the record."""

from __future__ import annotations

from outerloop.agent_tool import layout
from outerloop.attempt.context import RunContext
from outerloop.attempt.exits import end
from outerloop.attempt.steps import Leg, Step
from outerloop.attempt.submission import draw_seeds, measure
from outerloop.ledger import events as ev
from outerloop.ledger.records import BASE_BUNDLE, Ending
from outerloop.run.workspace import base_bundle, merge_onto, tree_of
from outerloop.sandbox import beneath


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
        data = base_bundle(ctx.paths, moved.base, run.park_seal)
        beneath.write(ctx.paths.ws, layout.rel(BASE_BUNDLE), data, 0o644, clear=True)
    return Leg()
