"""Intake: turn a maintainer's issue into a claimed, queued run.

The oldest open issue with standing that names exactly one benchmark of the
contract, has no live run and fewer than ``max_claims_per_issue`` claims (runs that
ended on a model outage do not count) gets a claim marker and a queued run whose
hypothesis is the issue's text. One claim per target per tick, and only when the run
could start now: an issue that must wait (``lanes/waiting.py``, the rule admission
applies: the target at its active-run cap, its week's runs, GPU-hours or model cost
spent, its dependency cache cold, an environment trap the tick found) is not claimed;
why it waits is said once on the issue and recorded once (``issue_waits``) for
``status`` and the board.

An issue is released (claimable again) only when its run failed to start (it ended
before its first leg) or ended on a model outage; any other ending answers the issue
with a report, and a maintainer who wants another attempt opens a new issue.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from outerloop.clock import compact
from outerloop.forge.base import Issue, LabelEvent
from outerloop.forge.markers import is_kernel_post
from outerloop.forge.standing import issue_has_standing
from outerloop.kernel.actions import Action, PostComment, RecordEvent
from outerloop.kernel.lanes.common import benchmarks_named, not_done
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.lanes.waiting import queued_runs, target_wait
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord
from outerloop.limits import target_limits
from outerloop.text import cap as cap_text

MAX_TITLE_CHARS = 300
MAX_HYPOTHESIS_CHARS = 20_000
"""An issue's text is copied into the ledger (``run_queued``) and into every prompt:
capped first, so a megabyte issue body costs 20 kB, not a megabyte per copy."""


def released(run: RunRecord) -> bool:
    """An ended run that leaves its issue claimable again (``RunRecord.released``)."""
    return run.released


def agent_slot(active_agents: set[str], width: int) -> str | None:
    """The lowest free ``agent-NN``."""
    for n in range(1, width + 1):
        name = f"agent-{n:02d}"
        if name not in active_agents:
            return name
    return None


def run_id_for(benchmark: str, now: datetime, agent: str, taken: Collection[str] = ()) -> str:
    """``<benchmark>-<UTC stamp>-<agent>``, with ``-2``, ``-3``... when that id is taken:
    two targets with a benchmark of the same name admitted in one tick never share a
    run id (run ids key the run directories, the ledger state and ``status``)."""
    base = f"{benchmark}-{compact(now)}-{agent}"
    run_id, n = base, 1
    while run_id in taken:
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def _queued_ids(actions: Iterable[Action]) -> set[str]:
    return {str(a.run) for a in actions
            if isinstance(a, RecordEvent) and isinstance(a.event, ev.RunQueued)}


def claim_text(run_id: str, benchmark: str, claim_no: int) -> str:
    return (f"outerloop claims this issue for benchmark `{benchmark}` as run `{run_id}` "
            f"(claim {claim_no}). The run's report will be posted here.")


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    if view.hold:
        return actions
    state = view.state
    for target in view.settings.targets:
        seen = view.obs.targets.get(target.repo)
        if seen is None or seen.error or seen.contract is None:
            continue
        actions.extend(_unposted_claims(view, target.repo))
        contract = seen.contract
        active = state.active_runs(target.repo)
        limits = target_limits(contract, view.settings)
        waits = target_wait(view, target.repo, limits,
                            ahead=len(queued_runs(view, planned, target.repo)))
        names = [b.name for b in contract.benchmarks]
        for issue in sorted(seen.issues, key=lambda i: (i.created_at, i.number)):
            if not _claimable(view, target.repo, issue, seen.label_events.get(issue.number, [])):
                continue
            found = benchmarks_named(names, f"{issue.title}\n{issue.body}")
            if len(found) != 1:
                actions.extend(_explain_once(view, target.repo, issue, names, found))
                continue
            if waits is not None:  # an issue that cannot start is not claimed
                actions.extend(_wait_once(view, target.repo, issue.number, waits.kind,
                                          f"{waits.reason}; the issue starts {waits.until}"))
                continue
            agent = agent_slot({r.agent for r in active}, limits.max_active_attempts)
            if agent is None:
                break
            runs = state.runs_of_issue(target.repo, issue.number)
            claim_no = max(len(runs), seen.claim_markers.get(issue.number, 0)) + 1
            taken = set(state.runs) | _queued_ids(planned) | _queued_ids(actions)
            run_id = run_id_for(found[0], view.obs.now, agent, taken)
            actions.append(RecordEvent(target=target.repo, run=run_id, event=ev.RunQueued(
                target=target.repo, benchmark=found[0], agent=agent, issue=issue.number,
                issue_title=cap_text(issue.title, MAX_TITLE_CHARS),
                hypothesis=cap_text(f"{issue.title}\n\n{issue.body}", MAX_HYPOTHESIS_CHARS),
                claim_no=claim_no)))
            actions.append(PostComment(
                target=target.repo, run=run_id, number=issue.number,
                body=claim_text(run_id, found[0], claim_no), marker_kind="claim",
                marker_key=run_id))
            break
    return actions


def _unposted_claims(view: TickView, repo: str) -> list[PostComment]:
    """The claim comment of a run queued by a tick that died before posting it: the
    run exists, so its issue is not claimable again, and the claim is posted now."""
    posts = []
    for run in view.state.active_runs(repo):
        if run.issue is None:
            continue
        post = PostComment(target=repo, run=run.run_id, number=run.issue,
                           body=claim_text(run.run_id, run.benchmark, run.claim_no),
                           marker_kind="claim", marker_key=run.run_id)
        if not_done(view.state, post):
            posts.append(post)
    return posts


def _wait_once(view: TickView, repo: str, number: int, kind: str, why: str) -> list[Action]:
    """Say once on the issue, and once in the ledger (``status``, the board), why it
    waits. Nothing is claimed."""
    actions: list[Action] = []
    post = PostComment(target=repo, number=number, marker_kind="status",
                       marker_key=f"waits-{kind}-{number}",
                       body=f"outerloop will take this issue, but it cannot start yet: {why}. "
                            f"Nothing needs to change on the issue.")
    if not_done(view.state, post):
        actions.append(post)
    if view.state.waiting.get((repo, number), ("",))[0] != why:
        actions.append(RecordEvent(target=repo, event=ev.IssueWaits(
            target=repo, issue=number, reason=why)))
    return actions


def _explain_once(view: TickView, repo: str, issue: Issue, names: list[str],
                  found: list[str]) -> list[Action]:
    """Tell the issue's author, once, why it is not being picked up."""
    if found:
        why = f"it names {len(found)} benchmarks ({', '.join(found)})"
    else:
        why = "it names none of the contract's benchmarks"
    how = (f"; with the local forge: `outerloop forge issue edit {issue.number} --body ...`"
           if view.settings.forge.kind == "local" else "")
    post = PostComment(
        target=repo, number=issue.number, marker_kind="status",
        marker_key=f"benchmark-{issue.number}-{len(found)}",
        body=(f"outerloop cannot take this issue yet: {why}. An issue is one hypothesis "
              f"about exactly one benchmark; name one of: "
              f"{', '.join('`' + n + '`' for n in names)}. Edit the issue's title or body to "
              f"continue (a comment does not count{how})."))
    return [post] if not_done(view.state, post) else []


def _claimable(view: TickView, repo: str, issue: Issue, label_events: list[LabelEvent]) -> bool:
    if issue.is_pull_request or issue.state != "open":
        return False
    if not view.settings.forge.login:
        return False
    if is_kernel_post(issue, view.settings.forge.kernel_logins):
        return False  # the kernel's own issues (alarms) are never work for it
    if not issue_has_standing(issue, label_events):
        return False
    runs = view.state.runs_of_issue(repo, issue.number)
    if any(not released(r) for r in runs):
        return False
    counted = len([r for r in runs if not r.outage])
    seen = view.obs.targets.get(repo)
    if seen is not None:  # the kernel's own claim markers on this target's issue
        outages = len(runs) - counted
        counted = max(counted, seen.claim_markers.get(issue.number, 0) - outages)
    return counted < view.settings.limits.max_claims_per_issue
