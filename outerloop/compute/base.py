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
from typing import Literal, Protocol

import msgspec
from pydantic import BaseModel, ConfigDict, Field

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


MAX_JOB_MINUTES = 60 * 24 * 14
MAX_GPUS_PER_NODE = 8
MAX_NODES = 64
MAX_ARRAY_SIZE = 1000
GPU_TYPE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class JobSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to run. Backends turn it into ``sbatch`` argv or a local runner.

    A msgspec struct (not pydantic): it travels inside the ``submit_job`` effect, which
    the fold decodes with every ledger line (see ``effects.py``). ``__post_init__`` checks
    it whether built in code or decoded from a ledger line or a job's ``spec.json``. The
    directories are kept as text (``work_path``/``log_path`` give them as paths): a
    ``Path`` field would cost the cold fold more than the rest of the action."""

    name: str
    command: str
    """A shell command, run with ``bash -c`` in ``workdir``."""
    workdir: str
    log_dir: str
    """stdout/stderr/exit_code/finished go here."""
    time_minutes: int
    cpus: int = 1
    mem_mb: int | None = None
    gpus: int = 0
    """GPUs per node (per array task)."""
    nodes: int = 1
    gpu_type: str | None = None
    gpu_request: Literal["gpus-per-node", "gres"] | None = None
    """How sbatch is asked for GPUs; None: [compute]'s form."""
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    extra_sbatch: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    """Shell lines run before the command, in the job (the operator's [compute] setup)."""
    nice: int = 0
    array_size: int | None = None
    array_concurrency: int | None = None
    after_any: tuple[str, ...] = ()
    singleton: bool = False
    begin: str | None = None
    requeue: bool | None = None
    """True: --requeue; False: --no-requeue; None: the cluster's default."""
    env: dict[str, str] = msgspec.field(default_factory=dict)
    """The allowlisted environment."""

    def __post_init__(self) -> None:
        """One cheap pass in the common case (it runs for every decoded submit); the
        field at fault is named only when something is wrong."""
        if JOB_NAME_RE.match(self.name) and 1 <= self.time_minutes <= MAX_JOB_MINUTES \
                and self.cpus >= 1 and 0 <= self.gpus <= MAX_GPUS_PER_NODE \
                and 1 <= self.nodes <= MAX_NODES and self.nice >= 0 \
                and self.mem_mb is None and self.array_size is None \
                and self.array_concurrency is None and self.gpu_type is None \
                and not self.after_any:
            return
        if not JOB_NAME_RE.match(self.name):
            raise ValueError(f"job name {self.name!r} must match {JOB_NAME_RE.pattern}")
        _in_range("time_minutes", self.time_minutes, 1, MAX_JOB_MINUTES)
        _in_range("cpus", self.cpus, 1)
        _in_range("mem_mb", self.mem_mb, 1)
        _in_range("gpus", self.gpus, 0, MAX_GPUS_PER_NODE)
        _in_range("nodes", self.nodes, 1, MAX_NODES)
        _in_range("nice", self.nice, 0)
        _in_range("array_size", self.array_size, 1, MAX_ARRAY_SIZE)
        _in_range("array_concurrency", self.array_concurrency, 1)
        if self.gpu_type is not None and not GPU_TYPE_RE.match(self.gpu_type):
            raise ValueError(f"gpu_type {self.gpu_type!r} must match {GPU_TYPE_RE.pattern}")
        for job_id in self.after_any:
            check_job_id(job_id)

    @property
    def work_path(self) -> Path:
        return Path(self.workdir)

    @property
    def log_path(self) -> Path:
        return Path(self.log_dir)

    def task_log_dir(self, task: int | None) -> Path:
        return self.log_path if task is None else self.log_path / str(task)


def _in_range(name: str, value: int | None, low: int, high: int | None = None) -> None:
    if value is None:
        return
    if value < low or (high is not None and value > high):
        upper = f" and at most {high}" if high is not None else ""
        raise ValueError(f"job spec {name}={value} must be at least {low}{upper}")


_SPEC_ENCODER = msgspec.json.Encoder()
_SPEC_DECODER = msgspec.json.Decoder(JobSpec)


def spec_to_json(spec: JobSpec) -> bytes:
    return _SPEC_ENCODER.encode(spec)


def spec_from_json(data: bytes | str) -> JobSpec:
    """Raises ``msgspec.ValidationError`` (a ``ValueError``) on a spec this version
    cannot read."""
    return _SPEC_DECODER.decode(data)


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
