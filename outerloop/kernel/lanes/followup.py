"""Followup: publication, review and the words that go back to the issue.

- a run credited by the gate (parked ``publish``) -> push the seal and open its PR
  (or move an open PR's head forward); when someone else moved that branch, the seal
  goes to a fresh branch and a new PR, the old thread told once (``publish_head``); a
  revision whose review says draft is held back from a PR that is already ready (the
  review is posted there and sent to the agent);
- a ready candidate whose base branch moved since its verdict -> the new base fetched
  into the run's kernel clone, then a job that merges the candidate onto it and measures
  the merge again, or wakes the agent to rebase on a conflict (``base_moved``);
- its PR merged -> ``merged`` and the leaderboard moves; closed -> ``rejected``;
- new comments, reviews and review comments from people with standing (never the
  kernel's own) are recorded for the run's next wake, once each (by id); a run parked
  in review with nothing in flight is woken by them. They are read from the forge's own
  cursor (``feedback_cursor``, see ``observe.read_since``), never from the kernel's clock;
- what the agent said ``--to thread`` is posted once, on the PR (or the issue, when no
  PR is open yet; a message posted there is not posted again once the PR opens),
  fenced under "The agent wrote" (the kernel posts it, but the words are the agent's);
- a ``/outerloop stop`` comment on the PR from someone with standing ends the run and is
  acknowledged once there (``steering.pr_commands``), before any feedback is read;
- a run in review whose review wakes died ``MAX_RECOVERIES`` + 1 times in a row
  (``lanes/bounds.py``) -> ``aborted`` with the reason, instead of a wake every tick;
- no activity for ``stale_days`` -> a stand-down comment, then ``rejected``;
- a run its agent withdrew (``stop --withdraw REASON``, ending ``withdrawn``): the
  reason is posted on its PR, fenced under "The agent wrote", and the PR is closed,
  before the report goes to the issue (so the run does not settle with its PR open);
- every ended run that came from an issue gets its report posted there once.
"""

from __future__ import annotations

from outerloop.clock import DAY_S, stamp
from outerloop.kernel.actions import (
    Action,
    CloseIssue,
    FetchBase,
    OpenPR,
    PostComment,
    RecordEvent,
    SubmitJob,
)
from outerloop.kernel.lanes import bounds
from outerloop.kernel.lanes.common import (
    end_run,
    ended_report,
    kernel_report,
    seconds_since,
    step_due,
)
from outerloop.kernel.lanes.steering import pr_commands, pr_feedback
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import PullObservation, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, ParkReason, RunRecord, RunState
from outerloop.limits import FOLLOWUP_JOB_MINUTES, target_limits
from outerloop.retry_rule import MAX_FRESH_BRANCHES
from outerloop.run.jobs import attempt_spec, job_name
from outerloop.run.paths import RunPaths
from outerloop.text import code_span, quote_agent
from outerloop.vocabulary import GateVerdict, JobPurpose

HELD_KIND = "held"
MOVED_KIND = "moved"
WITHDRAWN_KIND = "withdrawn"


def publish_heads(branch: str) -> list[str]:
    """The branches a run's candidate may be published on, in order: its own, then
    ``MAX_FRESH_BRANCHES`` fresh ones (``<branch>-2``...)."""
    return [branch, *(f"{branch}-{n}" for n in range(2, MAX_FRESH_BRANCHES + 2))]


def publish_head(run: RunRecord, branch: str) -> str:
    """Where the candidate is pushed: the head of its open PR (else its own branch),
    unless someone else moved that branch (``RunRecord.moved_heads``): then the next
    fresh branch. **Decision** (docs/architecture.md, "A branch someone else moved"):
    the candidate is published as measured, never rebased onto the other commits, so
    what the PR shows is what the gate credited; the other commits stay on their
    branch. All fresh branches moved too: the last, which waits on a human."""
    heads = publish_heads(branch)
    for head in heads[heads.index(run.pr_head if run.pr_head in heads else branch):]:
        if head not in run.moved_heads:
            return head
    return heads[-1]


def _moved_post(run: RunRecord, old: str, head: str, sha: str) -> PostComment | None:
    """Tell the thread once that the candidate goes to ``head``, and that the commits on
    ``old`` someone else pushed stay there: on the run's PR when ``old`` is its head,
    else on its issue."""
    number = run.pr_number if run.pr_head == old else run.issue
    if number is None:
        return None
    where = "this pull request" if run.pr_head == old else f"branch {code_span(old)}"
    return PostComment(
        target=run.target, run=run.run_id, number=number, marker_kind=MOVED_KIND,
        marker_key=f"{run.run_id}-{head}",
        body=(f"outerloop could not push the credited candidate {code_span(sha[:12])} of "
              f"run {code_span(run.run_id)} to {code_span(old)}: someone else pushed "
              f"commits there that the candidate does not contain, and outerloop never "
              f"overwrites another's commits. Those commits stay on {where}. The "
              f"candidate is published as it was measured from {code_span(head)} "
              f"instead (a new pull request); merge or cherry-pick the commits on "
              f"{code_span(old)} into it if they are wanted."))


def base_moved(run: RunRecord, seen: TargetObservation) -> str | None:
    """The base branch's head when it moved past the base a ready candidate was measured
    against (``RunRecord.base_sha``); None when it did not, or the head is not known.
    **Decision** (docs/architecture.md, "A base that moved"): a ready pull request shows
    evidence against the base it would merge into, so the candidate is merged onto the
    new base and measured again first (a conflict goes back to its agent); a draft is
    published as measured (a person reads it before it is ready, and its body names the
    base commit). A candidate the forge already shows a PR of (a home restored from
    before the PR opened; ``TargetObservation.published``) is not measured again: the
    tick records that PR (``_publish``)."""
    if run.publish is None or run.publish.draft or run.base_sha is None:
        return None
    if seen.base_sha is None or seen.base_sha == run.base_sha:
        return None
    return seen.base_sha


def _rebase_wake(view: TickView, run: RunRecord, seen: TargetObservation) -> list[Action]:
    """The job that merges a credited candidate onto the moved base and goes on from it
    (measures the merge against the new base, or wakes the agent to rebase), once nothing
    of the run is in flight; named by the base, so one that died is followed by a new
    job, at most ``MAX_RECOVERIES`` + 1 of them before the run ends ``aborted``."""
    if any(not view.state.jobs[j].terminal for j in run.job_ids if j in view.state.jobs):
        return []
    base = run.rebase_to or (run.rebased.base if run.rebased is not None else "")
    prefix = job_name(run.run_id, "rebase", base[:8], "")
    n = 1 + sum(1 for j in run.job_ids
                if j in view.state.jobs and view.state.jobs[j].name.startswith(prefix))
    if n > bounds.MAX_RECOVERIES + 1:
        return _end_with_report(run, Ending.ABORTED, (
            f"the base moved to {base[:12]} and {n - 1} jobs that were to merge the "
            f"credited candidate onto it died; see their stderr under runs/{run.run_id}/jobs/"))
    minutes = (target_limits(seen.contract, view.settings).attempt_job_minutes
               if seen.contract is not None else FOLLOWUP_JOB_MINUTES)
    spec = attempt_spec(view.settings, run.run_id, "wake",
                        job_name(run.run_id, "rebase", base[:8], n), minutes)
    return [SubmitJob(target=run.target, run=run.run_id, purpose=JobPurpose.WAKE, spec=spec)]


def _publish(view: TickView, run: RunRecord, seen: TargetObservation) -> list[Action]:
    if run.rebasing:
        return _rebase_wake(view, run, seen)
    if run.publish is None or seen.default_branch is None:
        return []
    pull = seen.pulls.get(run.pr_number) if run.pr_number is not None else None
    if run.publish.draft and pull is not None and not pull.pr.draft:
        return _hold(view, run, pull)
    moved = base_moved(run, seen)
    if moved is not None and run.run_id not in seen.published:
        fetch = FetchBase(target=run.target, run=run.run_id, base=moved,
                          seal=run.publish.seal_sha)
        return [fetch] if step_due(view, fetch) else []
    head = publish_head(run, run.publish.branch)
    action = OpenPR(
        target=run.target, run=run.run_id, head=head,
        base=seen.default_branch, sha=run.publish.seal_sha,
        source=str(RunPaths.of(view.settings.home, run.run_id).kernel),
        title=run.publish.title, body=run.publish.body, draft=run.publish.draft)
    actions: list[Action] = [action] if step_due(view, action) else []
    heads = publish_heads(run.publish.branch)
    if head != (run.pr_head if run.pr_head in heads else run.publish.branch):
        post = _moved_post(run, heads[heads.index(head) - 1], head, run.publish.seal_sha)
        if post is not None and step_due(view, post):
            actions.append(post)
    return actions


def _hold(view: TickView, run: RunRecord, pull: PullObservation) -> list[Action]:
    """A revision whose review says draft, for a PR that is already ready: the PR keeps
    its reviewed head (a ready PR never moves to an unreviewed candidate); the review
    is posted on the PR and goes back to the agent at its next wake (see the fold)."""
    assert run.publish is not None
    seal = run.publish.seal_sha
    review = run.publish.body.split("## Review", 1)[-1]
    review = "\n".join(line for line in review.splitlines()
                        if not line.startswith("<!-- outerloop:")).strip()
    body = (f"outerloop held back a revision of this pull request (candidate commit "
            f"`{seal[:12]}`): its review would make the pull request a draft, so the "
            f"pull request still shows the commit reviewed before.\n\n{review}\n")
    post = PostComment(target=run.target, run=run.run_id, number=pull.pr.number, body=body,
                       marker_kind=HELD_KIND, marker_key=f"{run.run_id}-{seal[:12]}")
    return [post] if step_due(view, post) else []


def _leader(run: RunRecord) -> RecordEvent | None:
    credited = [v for v in run.verdicts if v.verdict == GateVerdict.IMPROVED]
    if not credited:
        return None
    last = credited[-1]
    return RecordEvent(target=run.target, run=run.run_id, event=ev.Leader(
        target=run.target, benchmark=run.benchmark, value=str(last.candidate),
        baseline=last.baseline))


def _cursor(run: RunRecord, pull: PullObservation) -> list[RecordEvent]:
    """Move the run's read cursor to the newest stamps the forge returned (every item,
    with standing or not: the next read skips none it needs), planned after the
    ``feedback`` events of this read so a tick that dies between them reads them again.
    Nothing when the forge returned nothing newer than the cursor."""
    comments = max((stamp(c.updated_at) for c in pull.comments), default="")
    review_comments = max((stamp(rc.created_at) for rc in pull.review_comments), default="")
    if comments <= run.comments_cursor and review_comments <= run.review_comments_cursor:
        return []
    return [RecordEvent(target=run.target, run=run.run_id, event=ev.FeedbackCursor(
        comments_at=comments if comments > run.comments_cursor else "",
        review_comments_at=(review_comments if review_comments > run.review_comments_cursor
                            else "")))]


def _review(view: TickView, run: RunRecord, pull: PullObservation) -> list[Action]:
    pr = pull.pr
    if pr.merged:
        actions: list[Action] = _end_with_report(run, Ending.MERGED, f"PR #{pr.number} was merged.")
        leader = _leader(run)
        if leader is not None:
            actions.append(leader)
        return actions
    if pr.state == "closed":
        return _end_with_report(run, Ending.REJECTED,
                                f"PR #{pr.number} was closed without merging.")
    commands = pr_commands(view, run, pull)
    if any(isinstance(a, RecordEvent) and isinstance(a.event, ev.RunEnded) for a in commands):
        return [*commands, *_cursor(run, pull)]
    fresh = pr_feedback(view, run, pull)
    actions = [*commands, *fresh, *_cursor(run, pull)]
    in_flight = any(not view.state.jobs[j].terminal for j in run.job_ids
                    if j in view.state.jobs)
    dead = bounds.failed_wakes_in_a_row(view.state, run)
    if run.state == RunState.PARKED and run.park_reason == ParkReason.REVIEW and not in_flight \
            and len(dead) > bounds.MAX_RECOVERIES:  # each wake died before its leg
        return [*actions, *_end_with_report(run, Ending.ABORTED, bounds.given_up(
            view, run, len(dead), dead[0]))]
    if run.state == RunState.PARKED and run.park_reason == ParkReason.REVIEW and not in_flight and (
            fresh or run.undelivered) and not bounds.waits_for_space(view, run):
        # Numbered by the review wakes already submitted, so a wake that died before
        # delivering (killed, node failure) is followed by a new job, never a second
        # job under the same name.
        prefix = job_name(run.run_id, "review", "")
        n = 1 + sum(1 for j in run.job_ids
                    if j in view.state.jobs and view.state.jobs[j].name.startswith(prefix))
        spec = attempt_spec(view.settings, run.run_id, "wake",
                            job_name(run.run_id, "review", n), _followup_minutes(view, run))
        actions.append(SubmitJob(target=run.target, run=run.run_id, purpose=JobPurpose.WAKE,
                                 spec=spec))
    stale_s = view.settings.limits.stale_days * DAY_S
    if not fresh and run.park_reason == ParkReason.REVIEW and \
            seconds_since(run.last_activity_at, view.obs.now) > stale_s:
        actions.append(PostComment(
            target=run.target, run=run.run_id, number=pr.number,
            body=f"outerloop stands down on this PR: no activity for "
                 f"{view.settings.limits.stale_days} days.",
            marker_kind="status", marker_key=f"stale-{run.run_id}"))
        actions.extend(_end_with_report(run, Ending.REJECTED,
                                        "No review activity before the stale deadline."))
    return actions


def _end_with_report(run: RunRecord, ending: Ending, why: str) -> list[Action]:
    """End the run and, in the same tick, post its report on the issue (the same key as
    ``_report``, so a later tick never posts it twice)."""
    ended = end_run(run, ending, why, "followup")
    actions: list[Action] = [ended]
    if run.issue is not None:
        assert isinstance(ended.event, ev.RunEnded)
        actions.append(PostComment(target=run.target, run=run.run_id, number=run.issue,
                                   body=ended_report(run, ended.event), marker_kind="report",
                                   marker_key=run.run_id))
    return actions


def _outbox(view: TickView, run: RunRecord) -> list[Action]:
    number = run.pr_number or run.issue
    if number is None:
        return []
    actions: list[Action] = []
    for key, text in run.outbox.items():
        if key in run.posted:
            continue  # posted already, maybe on the issue before the PR opened
        post = PostComment(target=run.target, run=run.run_id, number=number,
                           body=quote_agent(text, f"(run {code_span(run.run_id)})"),
                           marker_kind="reply", marker_key=key)
        if step_due(view, post):
            actions.append(post)
    return actions


def _withdrawal(view: TickView, run: RunRecord) -> list[Action]:
    """A run its agent withdrew: the reason posted on its PR, then the PR closed;
    nothing once both are done (or failed for sure: a PR someone else merged)."""
    if run.ending != Ending.WITHDRAWN or run.pr_number is None:
        return []
    body = (f"outerloop closes this pull request: the agent of run {code_span(run.run_id)} "
            f"withdrew it.\n\n" + quote_agent(run.withdrawn or "(no reason recorded)",
                                              "(its reason)"))
    post = PostComment(target=run.target, run=run.run_id, number=run.pr_number, body=body,
                       marker_kind=WITHDRAWN_KIND, marker_key=run.run_id)
    close = CloseIssue(target=run.target, run=run.run_id, number=run.pr_number,
                       why="withdrawn by its agent", pull=True)
    return [action for action in (post, close) if step_due(view, action)]


def _report(view: TickView, run: RunRecord) -> list[Action]:
    if run.issue is None:
        return []
    post = PostComment(target=run.target, run=run.run_id, number=run.issue,
                       body=run.report or kernel_report(run, run.ending or "", ""),
                       marker_kind="report", marker_key=run.run_id)
    return [post] if step_due(view, post) else []


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    ended_now = {a.run for a in planned if isinstance(a, RecordEvent)
                 and isinstance(a.event, ev.RunEnded)}
    for run in view.state.active_runs():
        seen = view.obs.targets.get(run.target)
        if seen is None or seen.error or run.run_id in ended_now:
            continue
        actions.extend(_outbox(view, run))
        if run.state == RunState.PARKED and run.park_reason == ParkReason.PUBLISH:
            actions.extend(_publish(view, run, seen))
        elif run.pr_number is not None and run.pr_number in seen.pulls:
            actions.extend(_review(view, run, seen.pulls[run.pr_number]))
    for run in view.state.runs.select("unreported"):
        if run.ended and run.issue is not None and not run.report_posted:
            actions.extend(_outbox(view, run))
            withdrawal = _withdrawal(view, run)
            actions.extend(withdrawal or _report(view, run))
    return actions


def _followup_minutes(view: TickView, run: RunRecord) -> int:
    """The review wake job's limit: the contract's ``followup_job_minutes`` as clamped."""
    seen = view.obs.targets.get(run.target)
    if seen is None or seen.contract is None:
        return FOLLOWUP_JOB_MINUTES
    return target_limits(seen.contract, view.settings).followup_job_minutes
