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

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from outerloop.compute.spec import JOB_ID_RE as JOB_ID_RE
from outerloop.compute.spec import JOB_NAME_RE as JOB_NAME_RE
from outerloop.compute.spec import JobSpec as JobSpec
from outerloop.compute.spec import check_job_id as check_job_id
from outerloop.compute.spec import spec_from_json as spec_from_json
from outerloop.compute.spec import spec_to_json as spec_to_json
from outerloop.vocabulary import JobState as JobState


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


class JobObservation(BaseModel):
    """One job as observed now. For arrays, ``state`` combines ``tasks``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    job_id: str
    state: JobState
    name: str | None = None
    exit_code: int | None = None
    elapsed_s: int = 0
    gpu_seconds: int = Field(default=0, description="allocated GPUs x elapsed, summed "
                             "over every attempt (and every task of an array)")
    reason: str | None = Field(default=None, description="pending reason or note")
    tasks: dict[int, JobState] = Field(default_factory=dict)
    task_elapsed_s: dict[int, int] = Field(default_factory=dict, description="an array's "
                                           "tasks: each one's own elapsed (``elapsed_s`` "
                                           "is their sum)")


class QueueRow(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

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

    def find_by_name(self, name: str, live_only: bool = False,
                     home: Path | None = None) -> str | None:
        """The newest job with this name, or None. Used to reconcile intents, and
        (``live_only``: a job the scheduler still lists) before every submit. With
        ``home``, only a job that home submitted (a scheduler shared by several homes
        may hold another's job of the same name)."""
        ...

    def cancel(self, job_id: str) -> bool:
        """Cancel; True if the scheduler accepted. Cancelling a finished job is fine."""
        ...

    def lane_load(self, partition: str) -> dict[str, int] | None:
        """Nodes per state in ``partition`` (``{"idle": 1, "mixed": 2}``), what the
        agent's ``queue`` question shows; None when the backend has no partitions.
        Raises ``ComputeError`` when the scheduler cannot be asked."""
        ...
