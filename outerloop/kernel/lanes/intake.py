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

A wide issue (``forge/width.py``: the contract's ``budgets.issue_width`` or a writer's
``outerloop:width:N`` label) is claimed again, by the same rule and one run per tick,
until it has that many live runs, each by its own slot (docs/architecture.md, "Width
per issue").

An issue is released (claimable again) only when its run failed to start (it ended
before its first leg) or ended on a model outage; any other ending answers the issue
with a report, and a maintainer who wants another attempt opens a new issue. An issue
carrying the kernel's claim for a run the ledger does not hold (the ledger restored
from a backup older than the claim) is not claimed again: the forge remembers it.

``decisions`` says, issue by issue in the order intake takes them, what it does and
why (``IssueDecision``); ``plan`` acts on them and ``outlook`` answers for one issue
(``outerloop explain --issue``), so the explanation is the rule itself, not a copy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from outerloop.clock import compact
from outerloop.fleet import seat_key
from outerloop.forge.base import APPROVED_LABEL, Issue, LabelEvent
from outerloop.forge.markers import is_kernel_post
from outerloop.forge.standing import issue_has_standing
from outerloop.forge.width import Width, issue_width
from outerloop.kernel.actions import Action, PostComment, RecordEvent
from outerloop.kernel.lanes.common import benchmarks_named, step_due
from outerloop.kernel.lanes.integrate import combine_prs
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.lanes.waiting import Wait, queued_runs, target_wait
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


@dataclass(frozen=True, slots=True)
class IssueDecision:
    """What intake does with one issue at this tick, and why."""

    issue: Issue
    kind: str
    """``claim``, or why not: ``target`` (the whole target is skipped), ``skipped`` (a
    rule said nowhere: no standing, not open, claims spent, already answered),
    ``benchmarks`` (it names none or several: said once on the issue), ``waits`` (the
    target must wait: said once), ``no-slot``, ``behind`` (an older issue is claimed
    first: one claim per target per tick)."""
    why: str
    benchmark: str = ""
    agent: str = ""
    wait: Wait | None = None


def target_skip(view: TickView, repo: str) -> str | None:
    """Why intake claims nothing of ``repo`` this tick (None: it looks at its issues)."""
    if view.hold:
        return "HOLD exists in the home: no new runs until it is removed"
    seen = view.obs.targets.get(repo)
    if seen is None:
        return f"{repo} is not a target of this home ([[targets]] in outerloop.toml)"
    if seen.error:
        return f"the forge could not be read for {repo}: {seen.error}"
    if seen.contract is None:
        return f"the target's contract does not load, so the target is skipped: " \
               f"{seen.contract_error}; fix: `outerloop contract check .outerloop.yaml`"
    return None


def decisions(view: TickView, repo: str, planned: list[Action]) -> Iterator[IssueDecision]:
    """Intake's decision on each open issue of ``repo`` (``target_skip`` is None), oldest
    first, up to and including the first ``claim`` or ``no-slot``: at most one claim per
    target per tick, and no slot for one is none for the next."""
    seen = view.obs.targets[repo]
    assert seen.contract is not None
    limits = target_limits(seen.contract, view.settings)
    waits = target_wait(view, repo, limits, ahead=len(queued_runs(view, planned, repo)))
    names = [b.name for b in seen.contract.benchmarks]
    for issue in sorted(seen.issues, key=lambda i: (i.created_at, i.number)):
        refused = issue_refusal(view, repo, issue, seen.label_events.get(issue.number, []))
        if refused is not None:
            yield IssueDecision(issue, "skipped", refused)
            continue
        found = benchmarks_named(names, f"{issue.title}\n{issue.body}")
        if len(found) != 1:
            yield IssueDecision(issue, "benchmarks",
                                f"it names {len(found)} benchmarks ({', '.join(found)})"
                                if found else "it names none of the contract's benchmarks")
            continue
        if waits is not None:  # an issue that cannot start is not claimed
            yield IssueDecision(issue, "waits", f"{waits.reason}; the issue starts "
                                                f"{waits.until}", benchmark=found[0], wait=waits)
            continue
        agent = agent_slot({r.agent for r in view.state.active_runs(repo)},
                           limits.max_active_attempts)
        if agent is None:
            yield IssueDecision(issue, "no-slot", f"every one of the target's "
                                f"{limits.max_active_attempts} agent slot(s) is taken",
                                benchmark=found[0])
            return
        width = width_of(view, repo, issue)
        live = len([r for r in view.state.runs_of_issue(repo, issue.number)
                    if not released(r)])
        yield IssueDecision(issue, "claim", f"it names benchmark `{found[0]}` and the "
                            f"target can start a run" + (
                                f" (run {live + 1} of its width {width.runs})"
                                if width.runs > 1 else ""), benchmark=found[0], agent=agent)
        return


def outlook(view: TickView, repo: str, issue: Issue) -> IssueDecision:
    """What a tick that saw ``view`` does with ``issue`` (an issue the forge no longer
    lists as open included): ``plan``'s own decisions, read for one issue."""
    skip = target_skip(view, repo)
    if skip is not None:
        return IssueDecision(issue, "target", skip)
    last: IssueDecision | None = None
    for decided in decisions(view, repo, []):
        if decided.issue.number == issue.number:
            return decided
        last = decided
    seen = view.obs.targets[repo]
    refused = issue_refusal(view, repo, issue, seen.label_events.get(issue.number, []))
    if refused is not None:
        return IssueDecision(issue, "skipped", refused)
    if last is not None and last.kind == "no-slot":
        return IssueDecision(issue, "no-slot", last.why)
    if last is not None and last.kind == "claim":
        return IssueDecision(issue, "behind", f"issue #{last.issue.number} is older and is "
                             f"claimed first (one claim per target per tick)")
    return IssueDecision(issue, "skipped", "the forge does not list it among the open issues")


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    if view.hold:
        return actions
    state = view.state
    for target in view.settings.targets:
        if target_skip(view, target.repo) is not None:
            continue
        seen = view.obs.targets[target.repo]
        actions.extend(_unposted_claims(view, target.repo))
        for decided in decisions(view, target.repo, planned):
            issue = decided.issue
            if decided.kind == "benchmarks":
                actions.extend(_explain_once(view, target.repo, issue, decided.why))
            elif decided.kind == "waits" and decided.wait is not None:
                actions.extend(_wait_once(view, target.repo, issue.number,
                                          decided.wait.kind, decided.why))
            elif decided.kind == "claim":
                runs = state.runs_of_issue(target.repo, issue.number)
                claim_no = max(len(runs), seen.claim_markers.get(issue.number, 0)) + 1
                taken = set(state.runs) | _queued_ids(planned) | _queued_ids(actions)
                actions.extend(_claim(target.repo, issue, decided, claim_no,
                                      run_id_for(decided.benchmark, view.obs.now,
                                                 decided.agent, taken),
                                      seat_key(view.settings, target.repo, decided.agent),
                                      combine_prs(issue, view.settings.forge.kernel_logins)))
    return actions


def _claim(repo: str, issue: Issue, decided: IssueDecision, claim_no: int,
           run_id: str, seat: str, combines: list[int]) -> list[Action]:
    """The queued run (with the seat its slot runs in now, and the pull requests it
    combines when the issue is the kernel's ``combine`` issue) and its claim comment."""
    return [RecordEvent(target=repo, run=run_id, event=ev.RunQueued(
                target=repo, benchmark=decided.benchmark, agent=decided.agent,
                issue=issue.number, issue_title=cap_text(issue.title, MAX_TITLE_CHARS),
                hypothesis=cap_text(f"{issue.title}\n\n{issue.body}", MAX_HYPOTHESIS_CHARS),
                claim_no=claim_no, seat=seat, combines=combines)),
            PostComment(target=repo, run=run_id, number=issue.number,
                        body=claim_text(run_id, decided.benchmark, claim_no),
                        marker_kind="claim", marker_key=run_id)]


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
        if step_due(view, post):
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
    if step_due(view, post):
        actions.append(post)
    if view.state.waiting.get((repo, number), ("",))[0] != why:
        actions.append(RecordEvent(target=repo, event=ev.IssueWaits(
            target=repo, issue=number, reason=why)))
    return actions


def _explain_once(view: TickView, repo: str, issue: Issue, why: str) -> list[Action]:
    """Tell the issue's author, once, why it is not being picked up."""
    seen = view.obs.targets[repo]
    assert seen.contract is not None
    names = [b.name for b in seen.contract.benchmarks]
    found = benchmarks_named(names, f"{issue.title}\n{issue.body}")
    how = (f"; with the local forge: `outerloop forge issue edit {issue.number} --body ...`"
           if view.settings.forge.kind == "local" else "")
    post = PostComment(
        target=repo, number=issue.number, marker_kind="status",
        marker_key=f"benchmark-{issue.number}-{len(found)}",
        body=(f"outerloop cannot take this issue yet: {why}. An issue is one hypothesis "
              f"about exactly one benchmark; name one of: "
              f"{', '.join('`' + n + '`' for n in names)}. Edit the issue's title or body to "
              f"continue (a comment does not count{how})."))
    return [post] if step_due(view, post) else []


def issue_refusal(view: TickView, repo: str, issue: Issue,
                  label_events: list[LabelEvent]) -> str | None:
    """Why intake never takes ``issue`` as it stands (None: it may), said nowhere but
    here: the rules that keep strangers, the kernel's own posts and answered issues out."""
    if issue.is_pull_request:
        return "it is a pull request"
    if issue.state != "open":
        return f"it is {issue.state}"
    if not view.settings.forge.login:
        return "[forge] login is empty, so intake claims nothing; fix: set it"
    logins = view.settings.forge.kernel_logins
    if is_kernel_post(issue, logins):
        if not combine_prs(issue, logins):
            return "it is outerloop's own issue (an alarm), never work for it"
    elif not issue_has_standing(issue, label_events):
        return (f"its author {issue.author} ({issue.author_association.value.lower()}) has no "
                f"standing; fix: an owner, member or collaborator labels it "
                f"{APPROVED_LABEL}")
    runs = view.state.runs_of_issue(repo, issue.number)
    answering = [r for r in runs if not released(r)]
    answered = [r for r in answering if r.ended]
    if answered:
        run = answered[-1]
        return (f"run {run.run_id} answered it ({run.ending}); for another attempt, open a "
                f"new issue")
    width = width_of(view, repo, issue)
    if len(answering) >= width.runs:
        names = ", ".join(r.run_id for r in answering)
        return (f"run {names} works on it" if width.runs == 1 else
                f"runs {names} work on it (its width, {width.runs})")
    counted = len([r for r in runs if not r.outage])
    seen = view.obs.targets.get(repo)
    lost = [] if seen is None else [key for key in seen.claimed_by.get(issue.number, ())
                                    if not any(r.run_id == key for r in runs)]
    if lost:
        return (f"run {lost[-1]} claimed it, and this ledger does not hold that run (restored "
                f"from a backup older than the claim?); it is not claimed again; fix: with "
                f"ledger_remote the next tick takes the lost lines back from the remote; "
                f"for another attempt, open a new issue")
    if seen is not None:  # the kernel's own claim markers on this target's issue
        outages = len(runs) - counted
        counted = max(counted, seen.claim_markers.get(issue.number, 0) - outages)
    most = view.settings.limits.max_claims_per_issue * width.runs
    if counted >= most:
        return (f"it was claimed {counted} time(s), the most max_claims_per_issue allows "
                f"({most}" + (f", x its width {width.runs}" if width.runs > 1 else "")
                + "); for another attempt, open a new issue")
    return None


def width_of(view: TickView, repo: str, issue: Issue) -> Width:
    """How many runs ``issue`` gets at once (``forge/width.py``): its maintainer's
    ``outerloop:width:N`` label, its ``/outerloop widen N``, or the contract's
    ``budgets.issue_width``, capped by the
    target's agent slots; 1 for a target whose contract does not load."""
    seen = view.obs.targets.get(repo)
    if seen is None or seen.contract is None:
        return Width(1)
    limits = target_limits(seen.contract, view.settings)
    return issue_width(issue, seen.label_events.get(issue.number, []),
                       seen.contract.budgets.issue_width, limits.max_active_attempts,
                       view.state.widened.get((repo, issue.number)))
