"""Steering from the threads: what a maintainer writes on a live run's issue reaches the
run's next wake, as a comment on its pull request does (``pr_feedback``, read by
``followup``), and ``/outerloop`` commands in either thread.

- Only comments by people with standing (OWNER, MEMBER, COLLABORATOR), never the
  kernel's own, and only those written after the kernel claimed the issue for this run
  (the claim post's stamp, the forge's own clock): the discussion that led to the issue
  is in the brief already.
- Each is recorded once (by id, ``i<id>``) as ``feedback`` of kind ``issue comment``;
  the agent reads it, fenced and attributed, at its next leg. A run parked in review
  is woken for it like for a PR comment (``followup._review``: ``run.undelivered``).
- **Commands.** A comment whose first line is ``/outerloop stop [reason]`` ends the run
  (ending ``operator``, as ``outerloop end`` does; the next tick cancels its jobs and
  posts its report), from the issue's thread or its pull request's; only from people
  with standing, acknowledged once in that thread (marker ``command``, keyed by the
  run and the comment). Another ``/outerloop`` word is answered once with the commands
  there are; ``/outerloop widen N`` gives the run's issue N runs at once
  (``IssueWidened``, acknowledged once per issue and comment: ``_widen``); a command
  is recorded read, never passed to the agent. Order, for exactly once: the
  acknowledgement (looked up by its marker before it is posted), the ending, then the
  comment recorded as read (``feedback``), so a tick that dies between them does it
  again and repeats nothing.
- The thread is read only when the issue changed since the run last read it (its
  ``updated_at`` past ``RunRecord.issue_comments_cursor``, from the issue list the
  tick reads anyway): a quiet tick asks the forge nothing more. GitHub's stamps are
  whole seconds, so a comment posted in the second of the last read carries the
  cursor's own stamp: after a read that moved the cursor to a whole-second stamp the
  thread is read once more at that stamp, and only a read that finds nothing newer
  settles it (``issue_thread_settled``). A stamp finer than the second (the local
  forge's microseconds) is settled by the read that found it (``_stamp_is_exact``):
  one record per change, not two (the run's ledger budget). The cursor moves to
  the newest stamp read, the issue's own included (a label change read once), after
  the ``feedback`` events of the same read.
"""

from __future__ import annotations

import re

from outerloop.clock import stamp
from outerloop.forge.base import Comment
from outerloop.forge.markers import find_marker, is_kernel_post
from outerloop.forge.standing import author_has_standing
from outerloop.forge.width import MAX_ISSUE_WIDTH
from outerloop.kernel.actions import Action, PostComment, RecordEvent
from outerloop.kernel.lanes.common import end_run
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import PullObservation
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, RunRecord
from outerloop.text import code_span, one_line

ISSUE_COMMENT = "issue comment"
COMMAND_KIND = "command"
COMMAND_RE = re.compile(r"^/outerloop(?:\s+(\S+))?[ \t]*(.*)$", re.IGNORECASE)
COMMANDS = ("stop", "widen")
WIDEN_RE = re.compile(r"([0-9]{1,2})")


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    ended_now = {a.run for a in planned if isinstance(a, RecordEvent)
                 and isinstance(a.event, ev.RunEnded)}
    actions: list[Action] = []
    for run in view.state.active_runs():
        seen = view.obs.targets.get(run.target)
        if seen is None or seen.error or run.issue is None or run.run_id in ended_now:
            continue
        comments = seen.issue_comments.get(run.issue)
        if comments is None:
            continue
        updated = next((stamp(i.updated_at) for i in seen.issues if i.number == run.issue), "")
        actions.extend(_steering(view, run, comments, updated))
    return _widened_once(actions)


def _widened_once(actions: list[Action]) -> list[Action]:
    """``actions`` with one ``IssueWidened`` per command comment: every run of a wide
    issue reads the same ``/outerloop widen N``, and its width is recorded once."""
    seen: set[tuple[str, int, str]] = set()
    kept: list[Action] = []
    for action in actions:
        if isinstance(action, RecordEvent) and isinstance(action.event, ev.IssueWidened):
            key = (action.event.target, action.event.issue, action.event.source_id)
            if key in seen:
                continue
            seen.add(key)
        kept.append(action)
    return kept


def _steering(view: TickView, run: RunRecord, comments: list[Comment],
              issue_updated: str) -> list[Action]:
    logins = view.settings.forge.kernel_logins
    after = _claimed_at(run, comments, logins)
    events: list[Action] = []
    for c in comments:
        if f"i{c.id}" in run.feedback or not author_has_standing(c) \
                or is_kernel_post(c, logins) or after is None or stamp(c.created_at) <= after:
            continue
        command = thread_command(run, c, f"i{c.id}", run.issue or 0, ISSUE_COMMENT)
        events.extend(command if command is not None else [RecordEvent(
            target=run.target, run=run.run_id, event=ev.Feedback(
                source_id=f"i{c.id}", author=c.author, text=c.body,
                source_kind=ISSUE_COMMENT))])
    newest = max([issue_updated, *(stamp(c.updated_at) for c in comments)])
    if newest > run.issue_comments_cursor or not run.issue_thread_settled:
        events.append(RecordEvent(target=run.target, run=run.run_id, event=ev.FeedbackCursor(
            issue_comments_at=newest,
            issue_thread_settled=(newest <= run.issue_comments_cursor
                                  or _stamp_is_exact(newest)))))
    return events


def _stamp_is_exact(at: str) -> bool:
    """Whether a forge's stamp is finer than the second (a fraction that is not zero):
    no later comment can carry it, so one read settles the thread at it. A whole-second
    stamp (GitHub's) is not: a comment posted later in that second carries it too."""
    return not at.endswith(".000000Z")


def _widen(run: RunRecord, comment: Comment, source_id: str, number: int,
           asked: str) -> list[Action]:
    """``/outerloop widen N``: the run's issue gets N runs at once from now on (recorded
    once per comment, ``IssueWidened``; a width label still says more), acknowledged
    once per issue and comment however many of its runs read it. N from 1 to
    ``MAX_ISSUE_WIDTH``; else the acknowledgement says how, and nothing changes."""
    issue = run.issue or 0
    key = f"widen-{issue}-{source_id}"
    found = WIDEN_RE.fullmatch(asked)
    if found is None or not 1 <= int(found.group(1)) <= MAX_ISSUE_WIDTH:
        body = (f"outerloop did not widen issue #{issue}: {code_span(asked[:40] or 'nothing')} "
                f"is not a width; fix: `/outerloop widen N`, N from 1 to {MAX_ISSUE_WIDTH}.")
        return [PostComment(target=run.target, run=run.run_id, number=number, body=body,
                            marker_kind=COMMAND_KIND, marker_key=key)]
    width = int(found.group(1))
    body = (f"outerloop gives issue #{issue} up to {width} run(s) at once, as "
            f"{code_span(comment.author)} asked: each by its own agent slot, within the "
            f"target's limits and slots (`max_active_attempts`); a further run starts "
            f"when the target can start one. A width label on the issue still says more.")
    return [PostComment(target=run.target, run=run.run_id, number=number, body=body,
                        marker_kind=COMMAND_KIND, marker_key=key),
            RecordEvent(target=run.target, event=ev.IssueWidened(
                target=run.target, issue=issue, width=width, by=comment.author,
                source_id=source_id))]


def _claimed_at(run: RunRecord, comments: list[Comment], logins: list[str]) -> str | None:
    """From when the thread steers the run: its claim post's stamp when this read holds
    it (the first read, from the start); a later read holds only what is newer than the
    cursor, all of it after the claim. None: a first read without the run's claim (a run
    started without one): nothing before this read counts."""
    claim = find_marker(comments, "claim", run.run_id, logins)
    if claim is not None:
        return stamp(claim.created_at)
    return "" if run.issue_comments_cursor else None


def pr_commands(view: TickView, run: RunRecord, pull: PullObservation) -> list[Action]:
    """The ``/outerloop`` commands in the PR's comments from people with standing, not
    read before (``steering.thread_command``: acknowledged on the PR)."""
    logins = view.settings.forge.kernel_logins
    actions: list[Action] = []
    for c in pull.comments:
        if f"c{c.id}" in run.feedback or not author_has_standing(c) \
                or is_kernel_post(c, logins):
            continue
        command = thread_command(run, c, f"c{c.id}", pull.pr.number, "comment")
        actions.extend(command or [])
    return actions


def pr_feedback(view: TickView, run: RunRecord, pull: PullObservation) -> list[RecordEvent]:
    """The PR's comments, reviews and review comments from people with standing, never
    the kernel's, not recorded before, as ``feedback`` for the run's next leg (a
    command is ``pr_commands``')."""
    logins = view.settings.forge.kernel_logins
    items: list[tuple[str, str, str, str, str]] = []
    for c in pull.comments:
        if author_has_standing(c) and not is_kernel_post(c, logins) \
                and not is_thread_command(c.body):
            items.append((f"c{c.id}", c.author, c.body, "comment", ""))
    for r in pull.reviews:
        if r.body.strip() and author_has_standing(r) and not is_kernel_post(r, logins):
            items.append((f"r{r.id}", r.author, r.body, f"review ({r.state})", ""))
    for rc in pull.review_comments:
        if author_has_standing(rc) and not is_kernel_post(rc, logins):
            where = f"{rc.path}:{rc.line}" if rc.line else rc.path
            items.append((f"rc{rc.id}", rc.author, rc.body, "review comment", where))
    return [RecordEvent(target=run.target, run=run.run_id, event=ev.Feedback(
                source_id=sid, author=author, text=text, source_kind=kind, where=where))
            for sid, author, text, kind, where in items if sid not in run.feedback]


def _first_line(body: str) -> str:
    return body.strip().splitlines()[0].strip() if body.strip() else ""


def is_thread_command(body: str) -> bool:
    """Whether the comment's first line is a ``/outerloop`` command."""
    return COMMAND_RE.match(_first_line(body)) is not None


def thread_command(run: RunRecord, comment: Comment, source_id: str, number: int,
                   kind: str) -> list[Action] | None:
    """The actions of a ``/outerloop`` command on the comment's first line (the
    acknowledgement on thread ``number``, the ending, the comment recorded as read),
    or None when the comment is no command. Its author's standing is the caller's
    check."""
    first = _first_line(comment.body)
    found = COMMAND_RE.match(first)
    if found is None:
        return None
    word, rest = (found.group(1) or "").casefold(), one_line(found.group(2), 200)
    who = code_span(comment.author)
    read = [RecordEvent(target=run.target, run=run.run_id, event=ev.Feedback(
        source_id=source_id, author=comment.author, text=comment.body,
        source_kind=f"{kind} ({COMMAND_KIND})")),
        RecordEvent(target=run.target, run=run.run_id,  # for the kernel, not the agent
                    event=ev.FeedbackDelivered(source_ids=[source_id]))]
    if word not in COMMANDS:
        body = (f"outerloop did not act on this comment: {code_span(first[:80])} is not a "
                f"command it knows. Commands, on a comment's first line, from people "
                f"with standing: `/outerloop stop [reason]` ends run "
                f"{code_span(run.run_id)}; `/outerloop widen N` gives its issue N runs at "
                f"once, each by its own agent slot. Any other comment here reaches its "
                f"agent at its next wake.")
        ack = PostComment(target=run.target, run=run.run_id, number=number, body=body,
                          marker_kind=COMMAND_KIND, marker_key=f"{run.run_id}-{source_id}")
        return [ack, *read]
    if word == "widen":
        return [*_widen(run, comment, source_id, number, rest), *read]
    why = f"Stopped from the thread by {comment.author}" + (f": {rest}" if rest else ".")
    body = (f"outerloop stops run {code_span(run.run_id)}, as {who} asked: its jobs are "
            f"cancelled and its report follows on the issue.")
    ack = PostComment(target=run.target, run=run.run_id, number=number, body=body,
                      marker_kind=COMMAND_KIND, marker_key=f"{run.run_id}-{source_id}")
    return [ack, end_run(run, Ending.OPERATOR, why, "thread"), *read]
