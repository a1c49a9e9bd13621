"""The local backend's on-disk records: one directory per job, written atomically.

Layout under ``jobs_dir`` (the home's ``jobs/``)::

    counter              next job id (ids start at ``FIRST_JOB_ID``), guarded by .lock
    .lock                flock taken while an id is allocated and indexed
    names/<name>/latest  the newest id with this name (``find_by_name`` reads one file)
    names/<name>/<id>    one empty file per job with this name (``singleton`` scans it)
    active/<id>          present while the job may still run (``queue`` lists it)
    <id>/spec.json       the ``JobSpec`` as submitted
    <id>/state.json      the ``LocalJobRecord``: job and task states, times, pids
    <id>/runner.pid      the pid and identity of the job's process (its gate, then the
                         same process as its runner: ``local_gate``), written by ``submit``
    <id>/runner.lock     flock held by the one runner of this job
    <id>/runner.log      the runner's own stdout/stderr (its crashes land here)
    <id>/gate.reason     what the job's gate waits for (read until the runner writes)
    <id>/cancel          cancel request for the whole job; cancel.<k> for one task

``state.json`` has one writer at a time: ``submit`` before the runner starts, then
the runner. Readers never lock: every write is tmp + fsync + rename, so a reader
sees the old record or the new one, never a torn one (also after a power cut).
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from outerloop.compute.base import JobSpec, JobState, combine_task_states, spec_from_json

FIRST_JOB_ID = 10_000_000

SPEC_FILE = "spec.json"
STATE_FILE = "state.json"
RUNNER_PID_FILE = "runner.pid"
RUNNER_LOCK_FILE = "runner.lock"
RUNNER_LOG_FILE = "runner.log"
CANCEL_FILE = "cancel"


class TaskRecord(BaseModel):
    """One unit of work: the whole job, or one array task."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    state: JobState = JobState.PENDING
    pgid: int | None = Field(default=None, description="the task's process group")
    identity: str | None = Field(default=None, description="see process_identity()")
    exit_code: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    reason: str | None = None

    def elapsed_s(self, now: float) -> int:
        if self.started_at is None:
            return 0
        end = self.ended_at if self.ended_at is not None else now
        return max(0, int(end - self.started_at))


class LocalJobRecord(BaseModel):
    """Everything observers need about a job, in one small file.

    A job that is not an array has exactly one task, keyed 0, whose log dir is
    ``spec.log_dir`` itself; ``array`` tells observers not to expose it as a task.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    job_id: str
    name: str
    array: bool
    state: JobState = JobState.PENDING
    reason: str | None = None
    submitted_at: float
    time_minutes: int
    time_limit_s: float = Field(description="per task; scaled by seconds_per_minute")
    begin_at: float | None = None
    base_env: dict[str, str] = Field(default_factory=dict)
    gpus: int = Field(default=0, description="stand-in GPUs each task holds")
    gpu_pool: int = Field(default=0, description="[compute] local_gpus when submitted")
    runner_pid: int | None = None
    runner_identity: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    elapsed_s: int = Field(default=0, description="as of the last write; observe() "
                           "computes it live")
    tasks: dict[int, TaskRecord]

    def summarize(self) -> None:
        """Recompute the job-level fields from the tasks'."""
        self.elapsed_s = self.compute_used_s(time.time())
        states = [t.state for t in self.tasks.values()]
        self.state = combine_task_states(states) if self.array else states[0]
        starts = [t.started_at for t in self.tasks.values() if t.started_at is not None]
        self.started_at = min(starts) if starts else None
        if self.state.terminal:
            ends = [t.ended_at for t in self.tasks.values() if t.ended_at is not None]
            self.ended_at = max(ends) if ends else time.time()
            codes = [t.exit_code for _, t in sorted(self.tasks.items()) if t.exit_code is not None]
            self.exit_code = next((c for c in codes if c != 0), codes[0] if codes else None)
        else:
            self.ended_at = None
            self.exit_code = None

    def compute_used_s(self, now: float) -> int:
        """Elapsed as observers report it: the sum over tasks (for a plain job, its
        run time), i.e. the compute an array used, which is what budgets charge."""
        return sum(t.elapsed_s(now) for t in self.tasks.values())

    def gpu_seconds(self, now: float) -> int:
        return self.gpus * self.compute_used_s(now)


def new_record(
    job_id: str,
    spec: JobSpec,
    *,
    time_limit_s: float,
    begin_at: float | None,
    base_env: dict[str, str],
    gpu_pool: int = 0,
) -> LocalJobRecord:
    count = spec.array_size or 1
    return LocalJobRecord(
        job_id=job_id,
        name=spec.name,
        array=spec.array_size is not None,
        reason="None",
        submitted_at=time.time(),
        time_minutes=spec.time_minutes,
        time_limit_s=time_limit_s,
        begin_at=begin_at,
        base_env=base_env,
        gpus=spec.gpus,
        gpu_pool=gpu_pool,
        tasks={k: TaskRecord() for k in range(count)},
    )


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` so readers see the old or the new content, never a mix."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_record(job_dir: Path, record: LocalJobRecord) -> None:
    write_atomic(job_dir / STATE_FILE, record.model_dump_json())


def read_record(job_dir: Path) -> LocalJobRecord | None:
    """The record, or None when the job directory (or its state) does not exist."""
    try:
        text = (job_dir / STATE_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    return LocalJobRecord.model_validate_json(text)


def read_spec(job_dir: Path) -> JobSpec:
    return spec_from_json((job_dir / SPEC_FILE).read_bytes())


def read_runner_pid(job_dir: Path) -> tuple[int, str | None] | None:
    """(pid, identity) from ``runner.pid``, or None when ``submit`` has not written it."""
    try:
        pid_text, _, identity = (job_dir / RUNNER_PID_FILE).read_text(
            encoding="utf-8").strip().partition(" ")
        return int(pid_text), identity or None
    except (OSError, ValueError):
        return None


def cancel_file(job_dir: Path, task: int | None) -> Path:
    return job_dir / (CANCEL_FILE if task is None else f"{CANCEL_FILE}.{task}")


@lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8").strip()
    except OSError:
        return "-"


def _proc_stat(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/<pid>/stat`` (after the command name), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _has_proc() -> bool:
    return Path("/proc/self/stat").exists()


def process_identity(pid: int) -> str | None:
    """``<boot id>:<start time>`` of a live process, so a recycled pid (or the same
    pid after a reboot) is never mistaken for the process we started. None where
    there is no ``/proc`` (liveness then falls back to ``kill(pid, 0)``)."""
    return _identity(_proc_stat(pid))


def _identity(fields: list[str] | None) -> str | None:
    if fields is None or len(fields) < 20:
        return None
    return f"{_boot_id()}:{fields[19]}"


def process_alive(pid: int | None, identity: str | None) -> bool:
    """True while ``pid`` is the very process recorded (not a zombie, not reused)."""
    if pid is None or pid <= 0:
        return False
    if _has_proc():
        fields = _proc_stat(pid)
        if fields is None or fields[0] in ("Z", "X"):
            return False
        return identity is None or _identity(fields) == identity
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_alive(pgid: int) -> bool:
    """True while any process (zombies included) is left in the group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_runners(jobs_dir: Path) -> frozenset[int]:
    """The pids of the live runners of this jobs directory's active jobs (from each
    ``runner.pid``, identity checked): the kernel's own processes, which a runner
    that adopted them (a job submitting a job) must never kill as leftovers. Only
    the kernel writes these files; no sandboxed child can reach them."""
    pids: set[int] = set()
    try:
        names = os.listdir(jobs_dir / "active")
    except FileNotFoundError:
        return frozenset()
    for name in names:
        written = read_runner_pid(jobs_dir / name)
        if written is not None and process_alive(*written):
            pids.add(written[0])
    return frozenset(pids)
