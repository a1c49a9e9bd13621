"""The events of a run's threads (its issue and its pull request): what the agent asked
to post, the people's words recorded for its next leg, how far each thread was read,
and (from earlier versions) what was delivered."""

from __future__ import annotations

import msgspec

from outerloop.ledger.event_parts import _Event


class Outbox(_Event, tag="outbox", frozen=True, kw_only=True):
    """The agent asked to post ``text`` on its thread; the tick posts it once."""

    key: str
    text: str


class Feedback(_Event, tag="feedback", frozen=True, kw_only=True):
    """A reviewer's words (with standing), waiting to be delivered at a wake."""

    source_id: str
    author: str
    text: str
    source_kind: str = "comment"
    where: str = ""


class FeedbackCursor(_Event, tag="feedback_cursor", frozen=True, kw_only=True):
    """How far a run's pull request has been read, in the forge's own stamps: the newest
    ``updated_at`` of its comments and ``created_at`` of its review comments the forge
    returned (empty: not advanced). Written after the ``feedback`` events of the same
    read, so a tick that dies between them leaves the cursor behind (read again, never
    skipped). The next read asks ``since`` the cursor minus an overlap, never the
    kernel's clock: a comment posted while a tick ran, or while the tick host's clock
    was wrong, is still read; ids de-duplicate what is read twice."""

    comments_at: str = ""
    review_comments_at: str = ""
    issue_comments_at: str = ""
    issue_thread_settled: bool = False
    """A read of the run's issue found nothing past ``issue_comments_at``: the next read
    waits for a newer stamp. Until then the thread is read again at a stamp equal to
    the cursor's, since the forge's stamps are whole seconds (GitHub's) and a comment
    posted in the second of the last read carries that same stamp."""
    """How far the run's issue has been read for steering (``lanes/steering.py``): the
    newest stamp of its comments, or of the issue itself, the forge returned."""


class FeedbackDelivered(_Event, tag="feedback_delivered", frozen=True, kw_only=True):
    """Written by earlier versions as a wake began (before its leg ran), so a wake job
    killed in between lost the feedback; it is now ``LegEnded.delivered``. Still folded,
    so old ledgers read the same; written now only for a thread command
    (``lanes/steering.thread_command``), which is the kernel's, never the agent's."""

    source_ids: list[str]


class IssueWidened(_Event, tag="issue_widened", frozen=True, kw_only=True):
    """A maintainer asked, on a live run's thread (``/outerloop widen N``), for ``width``
    runs of ``issue`` at once: the issue's width from then on when no width label says
    otherwise (``forge/width.py``). Written in the target's tick file, once per command
    comment (``source_id``)."""

    target: str
    issue: int
    width: int
    by: str = ""
    source_id: str = ""


class CombineProposed(_Event, tag="combine_proposed", frozen=True, kw_only=True):
    """The integrator (``lanes/integrate.py``) looked at two credited pull requests of
    one benchmark: ``conflict`` empty, it opened a ``combine`` issue for them; else it
    said on the newer one which files both change. Written once per pair, in the
    target's tick file, after its effect."""

    target: str
    prs: list[int]
    conflict: list[str] = msgspec.field(default_factory=list)

