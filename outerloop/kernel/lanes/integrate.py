"""The integrator: credited wins that can go together are combined by an agent.

Two runs of one target in review whose pull requests carry credited results on the same
benchmark (``standing.credited_pr``) are looked at once per pair (``State.combined``,
recorded the tick after its effect is done: an effect that failed is tried again with
the retry rule's backoff, never dropped):

- **Compatible** (their candidates change no path in common, ``PublishReady.paths``):
  the kernel opens an issue of its own naming both (marker ``combine``, key
  ``<older>-<newer>``; ``OpenIssue`` is looked up by its marker before it is opened, so
  it opens once). Intake takes it like a maintainer's issue (``combine_prs``: only the
  kernel's own marker counts); its run gets each win as a patch in the agent's home
  (``PrepareWorkspace.wins``, without the eval-only paths) and builds the combined tree
  itself, in its sandbox (the kernel never applies agent bytes with git). The combination
  is gated like any submission, against the current base and under the target's
  false-credit budget; its pull request says which ones it supersedes.
- **Conflicting** (a path in common): said once on the newer pull request, with the
  files, and nothing is opened.

When a combination's pull request merges, each pull request it superseded that is still
open in review is told so and closed (``State.superseded``): its run ends as a closed
pull request does. At most one pair per target per tick; a pair neither of whose runs is
being combined already.
"""

from __future__ import annotations

from itertools import combinations

from outerloop.forge.base import Issue
from outerloop.forge.markers import trusted_markers
from outerloop.kernel.actions import Action, CloseIssue, OpenIssue, PostComment, RecordEvent
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import events as ev
from outerloop.ledger.history import credited_pr
from outerloop.ledger.state import ParkReason, RunRecord
from outerloop.run.paths import WINS_DIR
from outerloop.text import code_span

MARKER = "combine"
SUPERSEDED = "superseded"


def combine_prs(issue: Issue, logins: list[str]) -> list[int]:
    """The pull requests a kernel ``combine`` issue names (empty: not one; a marker
    anyone else typed counts for nothing)."""
    for marker, _issue in trusted_markers([issue], logins):
        older, _, newer = marker.key.partition("-")
        if marker.kind == MARKER and older.isdigit() and newer.isdigit():
            return [int(older), int(newer)]
    return []


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    if view.hold:
        return actions
    for target in view.settings.targets:
        seen = view.obs.targets.get(target.repo)
        if seen is None or seen.error:
            continue
        live = view.state.active_runs(target.repo)
        actions.extend(_close_superseded(view, target.repo, live))
        actions.extend(_one_pair(view, target.repo, live))
    return actions


def _wins(live: list[RunRecord]) -> list[RunRecord]:
    """The target's runs in review with a credited pull request, oldest PR first."""
    return sorted((r for r in live if r.park_reason == ParkReason.REVIEW and credited_pr(r)
                   and r.publish is not None and r.pr_number is not None),
                  key=lambda r: r.pr_number or 0)


def _one_pair(view: TickView, repo: str, live: list[RunRecord]) -> list[Action]:
    busy = {pr for r in live for pr in r.combines} | {
        pr for (target, pr) in view.state.superseded if target == repo}
    for a, b in combinations(_wins(live), 2):
        assert a.pr_number is not None and b.pr_number is not None
        assert a.publish is not None and b.publish is not None
        if a.benchmark != b.benchmark or (repo, a.pr_number, b.pr_number) in view.state.combined:
            continue
        both = sorted(set(a.publish.paths) & set(b.publish.paths))
        effect = (_conflict_note(repo, a, b, both) if both else _combine_issue(repo, a, b))
        if effect.key in view.state.done_keys:  # done: the pair is recorded as looked at
            return [RecordEvent(target=repo, event=ev.CombineProposed(
                target=repo, prs=[a.pr_number, b.pr_number], conflict=both))]
        if {a.pr_number, b.pr_number} & busy:
            continue
        return [effect] if step_due(view, effect) else []  # a failure: retried, backed off
    return []


def _conflict_note(repo: str, a: RunRecord, b: RunRecord, both: list[str]) -> PostComment:
    shown = ", ".join(code_span(p) for p in both[:20]) + (
        f" and {len(both) - 20} more" if len(both) > 20 else "")
    return PostComment(
        target=repo, run=b.run_id, number=b.pr_number or 0, marker_kind=MARKER,
        marker_key=f"conflict-{a.pr_number}-{b.pr_number}",
        body=(f"outerloop did not propose combining this pull request with #{a.pr_number} "
              f"(both carry a credited result on {code_span(b.benchmark)}): they conflict, "
              f"both change {shown}. To have both, merge one and let the other's run "
              f"rebase onto it, or combine them by hand."))


def _combine_issue(repo: str, a: RunRecord, b: RunRecord) -> OpenIssue:
    lines = [f"- #{r.pr_number}: {_gain(r)} (run {code_span(r.run_id)}, {r.agent})"
             for r in (a, b)]
    body = "\n".join([
        f"outerloop found two credited wins on the benchmark {code_span(a.benchmark)} "
        f"that change different files:",
        "", *lines, "",
        "Combine both into one tree. Each win is in your home as a patch against the base "
        f"it was measured on: `$HOME/{WINS_DIR}/{a.pr_number}.patch` and "
        f"`$HOME/{WINS_DIR}/{b.pr_number}.patch` (apply them with `git apply`, resolve "
        "what does not apply cleanly, check the benchmark) and submit the combination. "
        "It is measured against the current base like any submission. When its pull "
        f"request merges, #{a.pr_number} and #{b.pr_number} are closed as superseded."])
    return OpenIssue(target=repo, title=f"Combine #{a.pr_number} and #{b.pr_number} on "
                                        f"{a.benchmark}",
                     body=body, marker_kind=MARKER, marker_key=f"{a.pr_number}-{b.pr_number}",
                     n=1)


def _gain(run: RunRecord) -> str:
    told = next((v for v in reversed(run.verdicts) if v.baseline and v.candidate), None)
    return (f"{code_span(run.benchmark)} {told.baseline} -> {told.candidate}"
            if told is not None else "credited")


def _close_superseded(view: TickView, repo: str, live: list[RunRecord]) -> list[Action]:
    """Each pull request still in review that a merged combination superseded: told so
    (marker ``superseded``), then closed."""
    actions: list[Action] = []
    for run in live:
        by = view.state.superseded.get((repo, run.pr_number or 0))
        if run.pr_number is None or by is None:
            continue
        note = PostComment(target=repo, run=run.run_id, number=run.pr_number,
                           marker_kind=SUPERSEDED, marker_key=str(run.pr_number),
                           body=(f"outerloop closes this pull request: #{by}, merged, "
                                 f"combines its change with another credited one."))
        close = CloseIssue(target=repo, run=run.run_id, number=run.pr_number, pull=True,
                           why=f"superseded by #{by}")
        actions.extend(a for a in (note, close) if step_due(view, a))
    return actions
