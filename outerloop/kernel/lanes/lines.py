"""Research lines: each slot's line branch on the forge follows what its runs saved.

A run on a line (``RunRecord.line``) starts at a commit of the kernel's own (the line
with the base merged in, ``run/lines.py``), and its job saves the agent's work tree on
it at every hand-over (``line_saved``). This lane plans the push of the latest one
(``PushLine``, fast-forward only) whenever it is not the one pushed: at the run's
start that creates the line on the forge (a new line starts at the base), and after
its last hand-over it makes the next run of the slot start where this one stopped.

``slot_busy`` is the rule admission follows: the next run of a slot is not started
while an earlier run of the slot has a line commit not yet on the forge (it would start
from the line without it). A run does not settle before its line is pushed either
(``compaction.settled``), and its workspace (which holds the commits) is not cleaned
before that (``housekeeping``).

**A line a person rewrote** (force-pushed, so the run's line commit does not contain
the branch's head): the push is refused (``BranchMoved``, fast-forward only) and the
person's commits are never overwritten. The run's line is saved on a fresh branch
instead (``agents/<agent-id>-2``, ``-3``...: ``line_heads``; ``LineRecord.moved``), its
issue is told once where, and the slot's next run starts from the person's line. Past
``FRESH_LINES`` fresh branches moved too, the push waits on a human.
"""

from __future__ import annotations

from outerloop.contract import Contract
from outerloop.kernel.actions import Action, PostComment, PrepareWorkspace, PushLine
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.lanes.waiting import QueuedRun
from outerloop.ledger.state import RunRecord
from outerloop.line_paths import line_branch, line_head
from outerloop.run.paths import RunPaths, branch_name
from outerloop.text import code_span

MOVED_KIND = "line-moved"


def push_of(view: TickView, run: RunRecord) -> PushLine | None:
    """The push that brings ``run``'s line on the forge up to its latest commit, or
    None (no line, or nothing new)."""
    line = run.line
    if line is None or not line.head or not line.unpushed:
        return None
    return PushLine(target=run.target, run=run.run_id,
                    branch=line_head(line.branch, line.moved), sha=line.head,
                    source=str(RunPaths.of(view.settings.home, run.run_id).kernel))


def moved_post(run: RunRecord, push: PushLine) -> PostComment | None:
    """Tell the run's issue once that its line goes to a fresh branch, and that the
    commits a person pushed on the slot's line stay there."""
    if run.line is None or push.branch == run.line.branch or run.issue is None:
        return None
    return PostComment(
        target=run.target, run=run.run_id, number=run.issue, marker_kind=MOVED_KIND,
        marker_key=f"{run.run_id}-{push.branch}",
        body=(f"outerloop could not save run {code_span(run.run_id)}'s research line on "
              f"{code_span(run.line.branch)}: someone pushed commits there that the run's "
              f"line {code_span(push.sha[:12])} does not contain, and outerloop never "
              f"overwrites another's commits. The run's line is saved on "
              f"{code_span(push.branch)} instead; the slot's next run starts from "
              f"{code_span(run.line.branch)} as that person left it. Merge or "
              f"cherry-pick from {code_span(push.branch)} if its work is wanted."))


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    for run in view.state.runs.live():
        push = push_of(view, run)
        if push is None or run.cleaned:
            continue
        seen = view.obs.targets.get(run.target)
        if seen is None or seen.error:
            continue  # the forge could not be read: it is tried next tick
        if step_due(view, push):
            actions.append(push)
        post = moved_post(run, push)
        if post is not None and step_due(view, post):
            actions.append(post)
    return actions


def workspace_of(view: TickView, target: str, row: QueuedRun, contract: Contract,
                 base: str) -> PrepareWorkspace | None:
    """The ``PrepareWorkspace`` that starts the queued ``row`` at ``base``: on its slot's
    line when its benchmark has ``lines`` on (None while the slot is busy:
    ``slot_busy``), else on the base alone."""
    bench = contract.benchmark(row.benchmark)
    resets = view.state.line_resets.get((target, row.agent), 0)
    line = line_branch(row.agent, resets) if bench is not None and bench.lines_on else ""
    if line and slot_busy(view, target, row.agent, row.run):
        return None
    return PrepareWorkspace(target=target, run=row.run, base=base,
                            branch=branch_name(row.agent, row.run),
                            withhold=tuple(contract.eval_only), line=line,
                            wins=row.combines)


def slot_busy(view: TickView, target: str, agent: str, run_id: str) -> bool:
    """True while another run of ``agent`` on ``target`` has a line commit not yet on
    the forge: a run of that slot started now would miss it."""
    return any(r.line is not None and r.line.unpushed and r.agent == agent
               and r.target == target and r.run_id != run_id
               for r in view.state.runs.live())
