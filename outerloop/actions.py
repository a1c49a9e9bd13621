"""Actions: what the lanes decide and the executor performs. Data only.

Each action has an idempotency ``key`` that names its effect where the outside world
can be asked about it (the job name, the comment's marker, the PR's head branch), so
a crash between the write-ahead ``intent`` and its ``done`` is settled by looking the
key up, never by doing the effect twice.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from outerloop.compute.base import JobSpec


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    run: str | None = None

    @property
    def key(self) -> str:
        raise NotImplementedError


class SubmitJob(_Action):
    kind: Literal["submit_job"] = "submit_job"
    purpose: str = Field(description="climb | wake | launch | eval | resident | archive")
    launch: str | None = None
    spec: JobSpec

    @property
    def key(self) -> str:
        return f"job:{self.spec.name}"


class CancelJob(_Action):
    kind: Literal["cancel_job"] = "cancel_job"
    job_id: str
    why: str = ""

    @property
    def key(self) -> str:
        return f"cancel:{self.job_id}"


class PostComment(_Action):
    """A kernel post on an issue or PR, carrying ``<!-- outerloop:kind key=... -->``."""

    kind: Literal["post_comment"] = "post_comment"
    number: int
    body: str
    marker_kind: str
    marker_key: str

    @property
    def key(self) -> str:
        return f"comment:{self.target}#{self.number}:{self.marker_kind}:{self.marker_key}"


class OpenIssue(_Action):
    """A kernel issue on the target (an alarm), carrying its marker in the body; ``n``
    numbers the occasion, so a later, separate alarm is a new issue."""

    kind: Literal["open_issue"] = "open_issue"
    title: str
    body: str
    marker_kind: str
    marker_key: str
    n: int

    @property
    def key(self) -> str:
        return f"issue:{self.target}:{self.marker_kind}-{self.marker_key}-{self.n}"


class CloseIssue(_Action):
    kind: Literal["close_issue"] = "close_issue"
    number: int
    why: str = ""

    @property
    def key(self) -> str:
        return f"close:{self.target}#{self.number}"


class OpenPR(_Action):
    """Push ``sha`` to ``head`` (fast-forward only) and open or update its PR."""

    kind: Literal["open_pr"] = "open_pr"
    head: str
    base: str
    sha: str
    source: str = Field(description="local repository holding sha")
    title: str
    body: str
    draft: bool = False

    @property
    def key(self) -> str:
        return f"pr:{self.target}:{self.head}:{self.sha}"


class PrepareWorkspace(_Action):
    """Clone the target at ``base_sha`` into the run's workspace (local effect)."""

    kind: Literal["prepare_workspace"] = "prepare_workspace"
    base: str
    branch: str

    @property
    def key(self) -> str:
        return f"workspace:{self.run}"


class PublishRecord(_Action):
    """One commit on the target's research-log branch writing ``files`` (repo path ->
    text), guarded by the head read just before; ``reports`` names the runs whose
    reports it adds and ``summary`` hashes leader.json + BENCHMARKS.md."""

    kind: Literal["publish_record"] = "publish_record"
    branch: str
    files: dict[str, str]
    reports: list[str] = Field(default_factory=list)
    summary: str
    board: str = Field(default="", description="digest of the board files published")
    digest: str

    @property
    def key(self) -> str:
        return f"record:{self.target}:{self.digest}"


class CleanWorkspace(_Action):
    """Remove an ended run's ``ws/``, ``home/``, ``kernel/`` and ``trees/`` (local)."""

    kind: Literal["clean_workspace"] = "clean_workspace"

    @property
    def key(self) -> str:
        return f"clean:{self.run}"


class PruneJobs(_Action):
    """Remove a settled run's ``jobs/`` dirs: ``runs/<run>/jobs/`` and local compute's
    ``jobs/<id>/`` records of its jobs (local; no archive configured)."""

    kind: Literal["prune_jobs"] = "prune_jobs"

    @property
    def key(self) -> str:
        return f"prune:{self.run}"


class RecordEvent(_Action):
    """Append one ledger event; no outside effect, so no intent."""

    kind: Literal["record_event"] = "record_event"
    event_kind: str
    fields: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"event:{self.event_kind}:{self.run}"


Action = Annotated[
    SubmitJob | CancelJob | PostComment | OpenIssue | CloseIssue | OpenPR | PrepareWorkspace
    | PublishRecord | CleanWorkspace | PruneJobs | RecordEvent,
    Field(discriminator="kind"),
]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
