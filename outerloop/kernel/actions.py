"""Actions: what the lanes decide and the executor performs. Data only.

An action is an effect (``effects.py``: a job to submit, a comment to post, ...), each
with an idempotency ``key``, or ``RecordEvent``: one ledger event to append, which has
no outside effect and so no intent. ``plan()`` returns the ``Action`` union; the
executor matches on the type.
"""

from __future__ import annotations

import msgspec

from outerloop.effects import (
    CancelJob,
    CleanWorkspace,
    CloseIssue,
    EditComment,
    Effect,
    FetchBase,
    OpenIssue,
    OpenPR,
    PostComment,
    PrepareWorkspace,
    PruneDeps,
    PruneJobs,
    PublishRecord,
    PushLine,
    SubmitJob,
    Unreadable,
    WarmDeps,
    decode_effect,
    encode_effect,
)
from outerloop.ledger.events import BaseEvent, Intent

__all__ = ["Action", "CancelJob", "CleanWorkspace", "CloseIssue", "EditComment", "Effect",
           "FetchBase",
           "OpenIssue", "OpenPR", "PostComment", "PrepareWorkspace", "PruneDeps", "PruneJobs",
           "PublishRecord", "PushLine", "RecordEvent", "SubmitJob", "Unreadable", "WarmDeps",
           "decode_effect", "encode_effect", "intent_for"]


class RecordEvent(msgspec.Struct, frozen=True, kw_only=True):
    """Append one ledger event (built without its envelope; the executor stamps ``run``
    from the action); no outside effect, so no intent."""

    target: str
    run: str | None = None
    event: BaseEvent

    @property
    def kind(self) -> str:
        return "record_event"

    @property
    def key(self) -> str:
        return f"event:{self.event.kind}:{self.run}"


Action = Effect | RecordEvent
"""What a lane plans."""


def intent_for(action: Effect) -> Intent:
    """The write-ahead ``intent`` recording ``action`` (its envelope still unstamped), in
    the form its kind records: a research-log record by its files' hashes
    (``PublishRecord.recorded``), not its rendered files; a job by its spec's hash and
    what the fold reads of it (``SubmitJob.recorded``: the executor writes the spec
    ahead, ``kernel/recorded.py``); a pull request and a run's report comment by their
    body's hash (the body is the run's ``publish_ready`` or ``run_ended`` text). The
    intent names no key and no run: its action's are its own (``Intent.effect_key``,
    the action's ``run``)."""
    if isinstance(action, PublishRecord | SubmitJob | OpenPR | PostComment):
        action = action.recorded()
    return Intent(action=action)
