"""Steering from the issue thread: what a maintainer writes on a live run's issue reaches
the run's next wake, as a comment on its pull request does (``followup``).

- Only comments by people with standing (OWNER, MEMBER, COLLABORATOR), never the
  kernel's own, and only those written after the kernel claimed the issue for this run
  (the claim post's stamp, the forge's own clock): the discussion that led to the issue
  is in the brief already.
- Each is recorded once (by id, ``i<id>``) as ``feedback`` of kind ``issue comment``;
  the agent reads it, fenced and attributed, at its next leg. A run parked in review
  is woken for it like for a PR comment (``followup._review``: ``run.undelivered``).
- The thread is read only when the issue changed since the run last read it (its
  ``updated_at`` past ``RunRecord.issue_comments_cursor``, from the issue list the
  tick reads anyway): a quiet tick asks the forge nothing more. The cursor moves to
  the newest stamp read, the issue's own included (a label change read once), after
  the ``feedback`` events of the same read.
"""

from __future__ import annotations

from outerloop.clock import stamp
from outerloop.forge.base import Comment
from outerloop.forge.markers import find_marker, is_kernel_post
from outerloop.forge.standing import author_has_standing
from outerloop.kernel.actions import Action, RecordEvent
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import events as ev
from outerloop.ledger.records import RunRecord

ISSUE_COMMENT = "issue comment"


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
    return actions


def _steering(view: TickView, run: RunRecord, comments: list[Comment],
              issue_updated: str) -> list[RecordEvent]:
    logins = view.settings.forge.kernel_logins
    after = _claimed_at(run, comments, logins)
    events: list[RecordEvent] = [
        RecordEvent(target=run.target, run=run.run_id, event=ev.Feedback(
            source_id=f"i{c.id}", author=c.author, text=c.body, source_kind=ISSUE_COMMENT))
        for c in comments
        if f"i{c.id}" not in run.feedback and author_has_standing(c)
        and not is_kernel_post(c, logins) and after is not None
        and stamp(c.created_at) > after]
    newest = max([issue_updated, *(stamp(c.updated_at) for c in comments)])
    if newest > run.issue_comments_cursor:
        events.append(RecordEvent(target=run.target, run=run.run_id,
                                  event=ev.FeedbackCursor(issue_comments_at=newest)))
    return events


def _claimed_at(run: RunRecord, comments: list[Comment], logins: list[str]) -> str | None:
    """From when the thread steers the run: its claim post's stamp when this read holds
    it (the first read, from the start); a later read holds only what is newer than the
    cursor, all of it after the claim. None: a first read without the run's claim (a run
    started without one): nothing before this read counts."""
    claim = find_marker(comments, "claim", run.run_id, logins)
    if claim is not None:
        return stamp(claim.created_at)
    return "" if run.issue_comments_cursor else None
