"""The compute seam: job specs, observed states, and the ``Compute`` protocol.

Rules every backend keeps (they decide whether runs live or die):

- A failed or timed-out query raises ``ComputeUnavailable``: the caller defers and
  concludes nothing. A successful query with no record is ``GONE``, which is *not*
  "finished"; it only matters past a deadline.
- Job ids match ``JOB_ID_RE`` and are checked before they reach a command line.
- Every job writes, outside the work tree, into ``JobSpec.log_dir`` (or
  ``log_dir/<k>/`` for array task ``k``): ``stdout``, ``stderr``, ``exit_code`` and
  a ``finished`` marker, so results are read the same way whatever the backend.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from outerloop.kinds import GpuRequest

JOB_ID_RE = re.compile(r"^\d+(_\d+)?$")
JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class JobState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETING = "completing"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out_of_memory"
    CANCELLED = "cancelled"
    NODE_FAIL = "node_fail"
    INTERRUPTED = "interrupted"
    GONE = "gone"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def active(self) -> bool:
        return self in ACTIVE_STATES


TERMINAL_STATES = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.TIMEOUT,
        JobState.OUT_OF_MEMORY,
        JobState.CANCELLED,
        JobState.NODE_FAIL,
        JobState.INTERRUPTED,
    }
)
ACTIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING, JobState.COMPLETING})


def check_job_id(job_id: str) -> str:
    """Refuse anything that is not a plain job id before it reaches a command line."""
    if not JOB_ID_RE.match(job_id):
        raise ValueError(f"not a job id: {job_id!r} (expected digits, optionally _<task>)")
    return job_id


def combine_task_states(states: list[JobState]) -> JobState:
    """An array's state from its tasks': running while any runs, pending while any
    waits, completed only if all completed, else the first other terminal state."""
    if not states:
        return JobState.UNKNOWN
    if any(s in (JobState.RUNNING, JobState.COMPLETING) for s in states):
        return JobState.RUNNING
    if any(s == JobState.PENDING for s in states):
        return JobState.PENDING
    if JobState.UNKNOWN in states:
        return JobState.UNKNOWN
    if all(s == JobState.COMPLETED for s in states):
        return JobState.COMPLETED
    for s in states:
        if s.terminal and s != JobState.COMPLETED:
            return s
    return JobState.GONE


class JobSpec(BaseModel):
    """What to run. Backends turn it into ``sbatch`` argv or a local runner."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    command: str = Field(description="shell command, run with bash -c in workdir")
    workdir: Path
    log_dir: Path = Field(description="stdout/stderr/exit_code/finished go here")
    time_minutes: int = Field(ge=1, le=60 * 24 * 14)
    cpus: int = Field(default=1, ge=1)
    mem_mb: int | None = Field(default=None, ge=1)
    gpus: int = Field(default=0, ge=0, le=8, description="GPUs per node (per array task)")
    nodes: int = Field(default=1, ge=1, le=64)
    gpu_type: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    gpu_request: GpuRequest | None = Field(
        default=None, description="how sbatch is asked for GPUs; None: [compute]'s form")
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    extra_sbatch: tuple[str, ...] = ()
    setup: tuple[str, ...] = Field(default=(), description="shell lines run before the "
                                   "command, in the job (the operator's [compute] setup)")
    nice: int = Field(default=0, ge=0)
    array_size: int | None = Field(default=None, ge=1, le=1000)
    array_concurrency: int | None = Field(default=None, ge=1)
    after_any: tuple[str, ...] = ()
    singleton: bool = False
    begin: str | None = None
    requeue: bool | None = Field(default=None, description="True: --requeue; False: "
                                 "--no-requeue; None: the cluster's default")
    env: dict[str, str] = Field(default_factory=dict, description="allowlisted environment")

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        if not JOB_NAME_RE.match(value):
            raise ValueError("job name must match " + JOB_NAME_RE.pattern)
        return value

    @field_validator("after_any")
    @classmethod
    def _deps_ok(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for job_id in value:
            check_job_id(job_id)
        return value

    def task_log_dir(self, task: int | None) -> Path:
        return self.log_dir if task is None else self.log_dir / str(task)


class JobObservation(BaseModel):
    """One job as observed now. For arrays, ``state`` combines ``tasks``."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    state: JobState
    name: str | None = None
    exit_code: int | None = None
    elapsed_s: int = 0
    gpu_seconds: int = Field(default=0, description="allocated GPUs x elapsed, summed "
                             "over every attempt (and every task of an array)")
    reason: str | None = Field(default=None, description="pending reason or note")
    tasks: dict[int, JobState] = Field(default_factory=dict)


class QueueRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str
    name: str
    state: JobState
    elapsed: str = ""
    partition: str = ""
    submitted: str = ""
    reason: str = ""
    limit: str = ""
    gres: str = ""


class Compute(Protocol):
    """Where jobs run. Implementations: ``local.LocalCompute``, ``slurm.SlurmCompute``."""

    def submit(self, spec: JobSpec) -> str:
        """Start (or queue) the job; return its id. Raises ``ComputeError`` with the
        scheduler's own words on refusal."""
        ...

    def observe(self, job_ids: list[str]) -> dict[str, JobObservation]:
        """Every listed job's state in one bulk pass. Raises ``ComputeUnavailable``
        when the scheduler cannot be asked; a job with no record is ``GONE``."""
        ...

    def queue(self) -> list[QueueRow]:
        """The user's jobs the scheduler still lists."""
        ...

    def find_by_name(self, name: str) -> str | None:
        """The newest job with this name, or None. Used to reconcile intents."""
        ...

    def cancel(self, job_id: str) -> bool:
        """Cancel; True if the scheduler accepted. Cancelling a finished job is fine."""
        ...

    def lane_load(self, partition: str) -> dict[str, int] | None:
        """Nodes per state in ``partition`` (``{"idle": 1, "mixed": 2}``), what the
        agent's ``queue`` question shows; None when the backend has no partitions.
        Raises ``ComputeError`` when the scheduler cannot be asked."""
        ...
