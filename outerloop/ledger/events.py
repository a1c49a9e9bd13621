"""Typed ledger events: a pydantic discriminated union on ``kind``.

Every line carries the envelope ``{"v", "seq", "at", "kind", "run"?}``. Kinds a newer
version wrote, which this version does not know, parse as ``UnknownEvent``: kept and
ignored, never fatal. Events record facts; ``state.py`` folds them into ``State``.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    v: int = 1
    seq: int
    at: str
    run: str | None = None


# write-ahead intents -------------------------------------------------------------


class Intent(_Event):
    """About to perform ``action`` (its JSON); ``key`` identifies the effect."""

    kind: Literal["intent"] = "intent"
    key: str
    action: dict[str, Any]


class Done(_Event):
    """The effect of intent ``key`` happened; ``result`` holds what it returned."""

    kind: Literal["done"] = "done"
    key: str
    result: dict[str, Any] = Field(default_factory=dict)
    reconciled: bool = False


class Failed(_Event):
    """The effect of intent ``key`` failed for sure (not merely unknown)."""

    kind: Literal["failed"] = "failed"
    key: str
    error: str


class Note(_Event):
    """Something an operator should read: a deferral, a skipped target, a warning."""

    kind: Literal["note"] = "note"
    level: Literal["info", "warning", "error"] = "info"
    text: str
    target: str | None = None


# jobs ---------------------------------------------------------------------------


class JobEnded(_Event):
    """A job the state knew as live was observed in a terminal state."""

    kind: Literal["job_ended"] = "job_ended"
    job_id: str
    state: str
    exit_code: int | None = None
    elapsed_s: int = 0


# runs ---------------------------------------------------------------------------


class RunQueued(_Event):
    """Intake claimed an issue (or the kernel chose a benchmark): a run exists."""

    kind: Literal["run_queued"] = "run_queued"
    target: str
    benchmark: str
    agent: str
    issue: int | None = None
    issue_title: str = ""
    hypothesis: str = ""
    claim_no: int = 1


class LegStarted(_Event):
    kind: Literal["leg_started"] = "leg_started"
    leg: int
    role: str = Field(description="climb | wake | recover")
    job_id: str | None = None


class LegEnded(_Event):
    kind: Literal["leg_ended"] = "leg_ended"
    leg: int
    stop_reason: str
    is_error: bool = False
    session_id: str | None = None
    cost_usd: float = 0.0
    turns: int = 0
    progress: bool = True
    request: dict[str, Any] | None = Field(
        default=None, description="what the agent committed (sleep/stop), re-validated")
    error: str | None = Field(default=None, description="why the request was refused")


class Launched(_Event):
    """One experiment the agent asked for, as submitted (see ``launches`` in §10)."""

    kind: Literal["launched"] = "launched"
    sleep: int
    name: str
    job_id: str
    minutes: int
    why: str = ""
    command: str
    array: int | None = None
    concurrency: int | None = None
    artifacts: list[str] = Field(default_factory=list)
    seal: str
    job_name: str = ""


class Parked(_Event):
    """The run waits: on its jobs (``wake_job`` fires after them) or on review."""

    kind: Literal["parked"] = "parked"
    reason: Literal["jobs", "eval", "review"]
    job_ids: list[str] = Field(default_factory=list)
    wake_job: str | None = None
    deadline: str | None = None
    seal: str | None = None
    evals: list[dict[str, str]] = Field(
        default_factory=list, description="eval pairs: {'base': job id, 'cand': job id}")


class SeedsDrawn(_Event):
    """The gate's hidden seeds for submission ``submission``: kept in the ledger so a
    retried submission reuses them; never shown to the agent."""

    kind: Literal["seeds_drawn"] = "seeds_drawn"
    submission: int
    seeds: list[int]


class Verdict(_Event):
    kind: Literal["verdict"] = "verdict"
    verdict: str
    benchmark: str
    baseline: str | None = None
    candidate: str | None = None
    seeds: int = 1
    base_sha: str = ""
    seal_sha: str = ""
    detail: str = ""


class PublishReady(_Event):
    """Credited: the tick should push ``seal_sha`` and open (or update) the PR."""

    kind: Literal["publish_ready"] = "publish_ready"
    seal_sha: str
    branch: str
    title: str
    body: str
    report: str = Field(default="", description="the agent's report, for the final report")
    experiments: list[dict[str, Any]] = Field(default_factory=list)


class Outbox(_Event):
    """The agent asked to post ``text`` on its thread; the tick posts it once."""

    kind: Literal["outbox"] = "outbox"
    key: str
    text: str


class Feedback(_Event):
    """A reviewer's words (with standing), waiting to be delivered at a wake."""

    kind: Literal["feedback"] = "feedback"
    source_id: str
    author: str
    text: str
    source_kind: str = "comment"
    where: str = ""


class FeedbackDelivered(_Event):
    kind: Literal["feedback_delivered"] = "feedback_delivered"
    source_ids: list[str]


class RunEnded(_Event):
    """Exactly one per run; the first recorded (by time) is the ending."""

    kind: Literal["run_ended"] = "run_ended"
    ending: str
    report: str = ""
    by: str = ""
    refusal: str | None = Field(default=None, description="by=outage: auth | credit | "
                                "rate_limit | overload (sets the cooldown)")


class Leader(_Event):
    """The leaderboard moved: a merge of ``run`` set ``benchmark``'s best."""

    kind: Literal["leader"] = "leader"
    target: str
    benchmark: str
    value: str
    baseline: str | None = None


class UnknownEvent(_Event):
    """A kind this version does not know: kept, ignored."""

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str


_KNOWN: tuple[type[_Event], ...] = (
    Intent, Done, Failed, Note, JobEnded, RunQueued, LegStarted, LegEnded, Launched,
    Parked, SeedsDrawn, Verdict, PublishReady, Outbox, Feedback, FeedbackDelivered,
    RunEnded, Leader,
)
KNOWN_KINDS = frozenset(m.model_fields["kind"].default for m in _KNOWN)


def _kind_of(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return kind if isinstance(kind, str) and kind in KNOWN_KINDS else "unknown"


Event = Annotated[
    Annotated[Intent, Tag("intent")]
    | Annotated[Done, Tag("done")]
    | Annotated[Failed, Tag("failed")]
    | Annotated[Note, Tag("note")]
    | Annotated[JobEnded, Tag("job_ended")]
    | Annotated[RunQueued, Tag("run_queued")]
    | Annotated[LegStarted, Tag("leg_started")]
    | Annotated[LegEnded, Tag("leg_ended")]
    | Annotated[Launched, Tag("launched")]
    | Annotated[Parked, Tag("parked")]
    | Annotated[SeedsDrawn, Tag("seeds_drawn")]
    | Annotated[Verdict, Tag("verdict")]
    | Annotated[PublishReady, Tag("publish_ready")]
    | Annotated[Outbox, Tag("outbox")]
    | Annotated[Feedback, Tag("feedback")]
    | Annotated[FeedbackDelivered, Tag("feedback_delivered")]
    | Annotated[RunEnded, Tag("run_ended")]
    | Annotated[Leader, Tag("leader")]
    | Annotated[UnknownEvent, Tag("unknown")],
    Discriminator(_kind_of),
]



@functools.cache
def event_adapter() -> TypeAdapter[Any]:
    """Any one line, unknown kinds included (the slow, forgiving path)."""
    return TypeAdapter(Event)


_FAST = Annotated[
    Intent | Done | Failed | Note | JobEnded | RunQueued | LegStarted | LegEnded | Launched
    | Parked | SeedsDrawn | Verdict | PublishReady | Outbox | Feedback | FeedbackDelivered
    | RunEnded | Leader,
    Field(discriminator="kind"),
]


@functools.cache
def fast_events_adapter() -> TypeAdapter[list[Any]]:
    """Known kinds only, dispatched in pydantic's core: the fast path. A batch holding
    an unknown kind fails as a whole and is re-read line by line with
    ``event_adapter``. Built on first use: a quiet tick parses nothing."""
    return TypeAdapter(list[_FAST])
