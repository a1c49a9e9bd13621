"""A wide issue's one status comment, kept current.

An issue whose width is above one (``forge/width.py``), that holds more than one run,
or whose width label did not count as asked (``Width.why``), gets one kernel comment
(marker ``width``, key ``width-<issue>``) listing each of its runs: the slot, the run,
where it is. It is planned as an ``EditComment`` whose key names the body's hash: each
new listing is edited into the same comment once; a tick whose listing has not changed
plans nothing, and a retried edit sets the same body again.

Each run still posts its own claim (and, at its end, its report): the claim markers are
how the forge remembers a claim the ledger lost (``observe._claims_on``, intake's
``lost`` rule, ``max_claims_per_issue`` counted from the forge), so they stay one per
run; this comment is the one place a human reads the issue's runs together. It is kept
while any run of the issue is not settled, and planned after intake and admission, so a
run queued this tick is listed in the same tick.
"""

from __future__ import annotations

from outerloop.forge.width import Width
from outerloop.kernel.actions import Action, EditComment, RecordEvent
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.intake import width_of
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import events as ev
from outerloop.ledger.state import ParkReason, RunRecord, RunState

MARKER = "width"

_PARKED = {ParkReason.JOBS: f"{RunState.RUNNING} (waiting on its jobs)",
           ParkReason.EVAL: f"{RunState.RUNNING} (its candidate is being measured)",
           ParkReason.REVIEW: "in review", ParkReason.PUBLISH: "publishing"}


def where(run: RunRecord) -> str:
    """Where ``run`` is, in a few words (no stamps: the same run in the same place reads
    the same, so an unchanged listing is not edited again)."""
    if run.ended:
        words = f"ended: {run.ending}" + (
            " (its slot may be claimed again)" if run.released else "")
    elif not run.admitted:
        words = "queued"
    elif run.state == RunState.PARKED and run.park_reason is not None:
        words = _PARKED.get(run.park_reason, str(RunState.RUNNING))
    else:
        words = str(RunState.RUNNING)
    return words + (f", PR #{run.pr_number}" if run.pr_number is not None else "")


def status_body(number: int, width: Width, rows: list[tuple[str, str, str]]) -> str:
    """The comment: the issue's width (and why it is not what was asked) and one row per
    run, ``(slot, run id, where)``, in claim order."""
    lines = [f"outerloop runs issue #{number} with width {width.runs}: up to {width.runs} "
             f"runs at once, each by its own agent slot (on its own research line when "
             f"the benchmark has lines).",
             *([f"Width: {width.why}."] if width.why else []), "",
             "| slot | run | where |", "|---|---|---|",
             *(f"| {slot} | `{run}` | {words} |" for slot, run, words in rows), "",
             "This comment is edited as the runs move; each run's claim and report are "
             "posted below as usual."]
    return "\n".join(lines)


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    queued: dict[tuple[str, int], list[tuple[str, str, str]]] = {}
    for a in planned:  # runs intake queued this tick: listed at once
        if isinstance(a, RecordEvent) and isinstance(a.event, ev.RunQueued) \
                and a.event.issue is not None and a.run is not None:
            queued.setdefault((a.target, a.event.issue), []).append(
                (a.event.agent, a.run, "queued"))
    issues = {(r.target, r.issue) for r in view.state.runs.live()
              if r.issue is not None and not r.settled} | set(queued)
    for repo, number in sorted(issues):
        seen = view.obs.targets.get(repo)
        if seen is None or seen.error:
            continue
        runs = [r for r in view.state.runs_of_issue(repo, number)
                if not any(run == r.run_id for _, run, _ in queued.get((repo, number), []))]
        rows = [(r.agent, r.run_id, where(r)) for r in runs] + queued.get((repo, number), [])
        wide = len([r for r in runs if not r.released]) + len(queued.get((repo, number), []))
        issue = next((i for i in seen.issues if i.number == number), None)
        width = width_of(view, repo, issue) if issue is not None else Width(wide)
        if width.runs < 2 and wide < 2 and not width.why:  # its claim says it all
            continue
        edit = EditComment(target=repo, number=number, marker_kind=MARKER,
                           marker_key=f"width-{number}",
                           body=status_body(number, width, rows))
        if step_due(view, edit):
            actions.append(edit)
    return actions
