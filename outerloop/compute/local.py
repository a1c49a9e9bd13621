"""``LocalCompute``: jobs as detached background processes, with Slurm's semantics.

Used where there is no Slurm (a laptop, the demo, tests). Not a shortcut: ``submit``
returns at once and a detached process in its own session waits for ``after_any``
dependencies, ``singleton`` and ``begin`` (as a small bash gate, ``local_gate``, so a
waiting job holds no Python), then becomes the runner (``compute/runner_main.py``),
which runs the command under its time limit (the whole process group is killed at walltime
-> ``timeout``), runs array tasks at most K at a time, and writes state, exit codes
and output to disk. Observing is reading small files: no subprocess, no waiting on a job.

GPUs are stand-ins: ``[compute] local_gpus`` device ids are handed out in
``CUDA_VISIBLE_DEVICES`` to tasks that ask for ``gpus`` (``local_gpus``), and a job
asking for more than exist is refused at submit, as sbatch refuses it. The
operator's ``pass_env`` and ``setup`` apply as on Slurm (``jobenv``). Not emulated:
partition, account, qos, nice, cpus and mem are accepted and ignored (one machine,
first come first served); ``requeue`` has no effect because nothing preempts a local
job. ``[compute] local_start = "fork"`` forks runners and the kernel's job commands
from a warm interpreter instead of starting Python afresh (``local_fork``). The
on-disk layout is described in ``local_records``; the runner lives in ``local_runner``.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import NoReturn

import msgspec

from outerloop import config
from outerloop.compute import jobenv, local_gate, local_gpus
from outerloop.compute.base import (
    JobObservation,
    JobSpec,
    JobState,
    QueueRow,
    check_job_id,
    spec_to_json,
)
from outerloop.compute.local_records import (
    FIRST_JOB_ID,
    RUNNER_LOG_FILE,
    RUNNER_PID_FILE,
    SPEC_FILE,
    LocalJobRecord,
    cancel_file,
    group_alive,
    new_record,
    process_alive,
    process_identity,
    read_record,
    read_runner_pid,
    write_atomic,
    write_record,
)
from outerloop.config import ComputeSettings
from outerloop.errors import ComputeError

ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "TMPDIR")
RUNNER_START_GRACE_S = 60.0
PARTITION = "local"

_BEGIN_RE = re.compile(r"^now(?:\+(\d+)(seconds|minutes|hours|days|weeks|s|m|h|d|w)?)?$")
_UNIT_S = {"": 1, "s": 1, "seconds": 1, "m": 60, "minutes": 60, "h": 3600, "hours": 3600,
           "d": 86400, "days": 86400, "w": 604800, "weeks": 604800}

# Runner processes started by this process, kept so they are reaped (no zombies,
# no "still running" warnings) when a later call notices they ended.
_children: list[subprocess.Popen[bytes]] = []


class LocalCompute:
    """Jobs under ``jobs_dir`` (the home's ``jobs/``), run by detached runners.

    ``seconds_per_minute`` scales time limits (``time_minutes``) and exists for
    tests only, so a one-minute limit can expire in a second; leave it at 60.
    """

    def __init__(self, jobs_dir: Path, *, seconds_per_minute: float = 60.0,
                 settings: ComputeSettings | None = None) -> None:
        if seconds_per_minute <= 0:
            raise ValueError("seconds_per_minute must be positive")
        self.jobs_dir = Path(jobs_dir).absolute()
        self.seconds_per_minute = seconds_per_minute
        self.settings = settings or ComputeSettings()

    def job_dir(self, job_id: str) -> Path:
        return self.jobs_dir / job_id

    # -- submit ----------------------------------------------------------------

    def submit(self, spec: JobSpec) -> str:
        """Record the job, start its detached runner, return the id at once.

        Refusals (an unparsable ``begin``, a log dir that cannot be created, a
        runner that cannot be started) raise ``ComputeError``, like sbatch's own.
        """
        _reap_children()
        now = time.time()
        begin_at = parse_begin(spec.begin, now)
        caller_env = config.environ()
        # The runner works from another directory: pin relative paths to ours.
        spec = jobenv.with_operator_settings(msgspec.structs.replace(
            spec, workdir=str(spec.work_path.absolute()),
            log_dir=str(spec.log_path.absolute())),
            self.settings, caller_env)
        if spec.gpus > self.settings.local_gpus:
            raise ComputeError(f"job {spec.name} asks for {spec.gpus} GPU(s) but local "
                               f"compute has {self.settings.local_gpus} stand-in GPU(s); fix: "
                               f"set [compute] local_gpus to at least {spec.gpus}")
        try:
            spec.log_path.mkdir(parents=True, exist_ok=True)
            self.jobs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ComputeError(f"cannot create {exc.filename}: {exc.strerror}; "
                               f"fix the path or its permissions") from None
        base_env = {k: caller_env[k] for k in ENV_ALLOWLIST if k in caller_env}
        with self._locked():
            job_id = self._allocate_id()
            record = new_record(job_id, spec, begin_at=begin_at, base_env=base_env,
                                time_limit_s=spec.time_minutes * self.seconds_per_minute,
                                gpu_pool=self.settings.local_gpus)
            # Observers see this reason until the gate says its own (gate.reason).
            record.reason = self.pending_reason(spec, job_id, begin_at, set()) or "None"
            staging = self.jobs_dir / f".new-{job_id}"
            staging.mkdir()
            write_atomic(staging / SPEC_FILE,
                         msgspec.json.format(spec_to_json(spec), indent=1).decode("utf-8"))
            write_record(staging, record)
            os.replace(staging, self.job_dir(job_id))
            self._index(job_id, spec.name)
        self._start_runner(job_id, spec, record, caller_env)
        return job_id

    def pending_reason(self, spec: JobSpec, job_id: str, begin_at: float | None,
                       ended: set[str]) -> str | None:
        """squeue's pending reason for a job that has not started (``BeginTime``,
        ``Dependency``), or None when it may start. ``ended`` collects the ids seen
        ended, which stay ended (the runner keeps it across its polls)."""
        if begin_at is not None and time.time() < begin_at:
            return "BeginTime"
        waiting = [j for j in spec.after_any if j not in ended]
        if spec.singleton:
            waiting += [j for j in self._older_same_name(spec.name, job_id) if j not in ended]
        if not waiting:
            return None
        for dep, obs in self.observe(waiting).items():
            if obs.state.terminal or obs.state == JobState.GONE:
                ended.add(dep)
        return "Dependency" if any(j not in ended for j in waiting) else None

    def _older_same_name(self, name: str, job_id: str) -> list[str]:
        own = int(job_id)
        try:
            names = os.listdir(self.jobs_dir / "names" / name)
        except FileNotFoundError:
            return []
        return [n for n in names if n.isdigit() and int(n) < own]

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.jobs_dir / ".lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _allocate_id(self) -> str:
        """Next id from the counter; if the counter is lost, past every job dir."""
        counter = self.jobs_dir / "counter"
        try:
            next_id = int(counter.read_text(encoding="utf-8").strip())
        except (FileNotFoundError, ValueError):
            existing = [int(p.name) for p in self.jobs_dir.iterdir() if p.name.isdigit()]
            next_id = max([FIRST_JOB_ID - 1, *existing]) + 1
        write_atomic(counter, f"{next_id + 1}\n")
        return str(next_id)

    def _index(self, job_id: str, name: str) -> None:
        """``latest`` first: a submitter killed part way leaves the job findable by its
        name (so a retry finds it, never submits it twice), or not indexed at all."""
        names = self.jobs_dir / "names" / name
        names.mkdir(parents=True, exist_ok=True)
        write_atomic(names / "latest", job_id + "\n")
        (names / job_id).touch()
        active = self.jobs_dir / "active"
        active.mkdir(exist_ok=True)
        (active / job_id).touch()

    def _start_runner(self, job_id: str, spec: JobSpec, record: LocalJobRecord,
                      env: dict[str, str]) -> None:
        """Start the job's process: the gate while it must wait, else the runner."""
        job_dir = self.job_dir(job_id)
        if self.settings.local_start == "fork":
            self._fork_runner(job_id, record, env)
            return
        fds = os.pipe()
        keys = local_gpus.lock_keys(self.jobs_dir, record.gpu_pool) if spec.gpus > 0 else []
        gate = local_gate.gate_argv(self.jobs_dir, job_id, spec, record.begin_at,
                                    python=sys.executable, fds=fds,
                                    grace_s=RUNNER_START_GRACE_S, gpu_keys=keys)
        argv = gate or local_gate.runner_argv(sys.executable, self.jobs_dir, job_id)
        try:
            with open(job_dir / RUNNER_LOG_FILE, "ab") as log:
                proc = subprocess.Popen(
                    argv, cwd=job_dir, env=env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                    pass_fds=fds if gate else (),
                )
        except OSError as exc:
            self._runner_failed(job_dir, record, exc)
        finally:
            for fd in fds:
                os.close(fd)
        _children.append(proc)
        _record_runner_pid(job_dir, proc.pid)

    def _fork_runner(self, job_id: str, record: LocalJobRecord, env: dict[str, str]) -> None:
        """``local_start = "fork"``: the runner forked from a warm interpreter; it waits
        for what the job waits for itself (no gate)."""
        from outerloop.compute import local_fork

        job_dir = self.job_dir(job_id)
        try:
            argv = local_gate.runner_argv(sys.executable, self.jobs_dir, job_id)[1:]
            pid = local_fork.start_runner(argv, cwd=job_dir, env=env,
                                          log=job_dir / RUNNER_LOG_FILE)
        except OSError as exc:
            self._runner_failed(job_dir, record, exc)
        _record_runner_pid(job_dir, pid)

    def _runner_failed(self, job_dir: Path, record: LocalJobRecord, exc: OSError) -> NoReturn:
        for task in record.tasks.values():
            task.state = JobState.NODE_FAIL
        record.reason = f"runner could not start: {exc}"
        record.summarize()
        write_record(job_dir, record)
        (self.jobs_dir / "active" / record.job_id).unlink(missing_ok=True)
        raise ComputeError(f"local job {record.job_id}: cannot start its runner ({exc}); "
                           f"fix: check that {sys.executable} can run "
                           f"`-m outerloop`") from None

    # -- observe ---------------------------------------------------------------

    def observe(self, job_ids: list[str]) -> dict[str, JobObservation]:
        """Each id's state from its ``state.json`` (``<id>_<k>`` gives one task).

        An id with no directory is ``GONE``. A job the record calls pending or
        running whose runner is dead (killed, or the machine restarted) is
        ``NODE_FAIL``, or ``CANCELLED`` if a cancel was requested.
        """
        _reap_children()
        now = time.time()
        out: dict[str, JobObservation] = {}
        for job_id in job_ids:
            check_job_id(job_id)
            parent, _, task_part = job_id.partition("_")
            record = self.current_record(parent)
            if record is None:
                out[job_id] = JobObservation(job_id=job_id, state=JobState.GONE)
            elif task_part:
                out[job_id] = _observe_task(job_id, record, int(task_part), now)
            else:
                out[job_id] = _observe_job(record, now)
        return out

    def current_record(self, job_id: str) -> LocalJobRecord | None:
        """The record as an observer should see it: a non-terminal record whose
        runner is dead is settled (in memory only) as node_fail or cancelled."""
        job_dir = self.job_dir(job_id)
        record = read_record(job_dir)
        if record is None or record.state.terminal:
            return record
        if self._runner_alive(record):
            if record.runner_pid is None:
                record.reason = local_gate.gate_reason(job_dir) or record.reason
            return record
        # The runner may have written its final state and exited just now.
        record = read_record(job_dir)
        if record is None or record.state.terminal:
            return record
        cancelled = cancel_file(job_dir, None).exists()
        settled = JobState.CANCELLED if cancelled else JobState.NODE_FAIL
        for task in record.tasks.values():
            if not task.state.terminal:
                task.state = settled
        record.summarize()
        record.reason = ("cancelled; its runner is gone" if cancelled else
                         f"runner pid {record.runner_pid} is gone (killed, or the machine "
                         f"restarted) before the job ended; see {job_dir / RUNNER_LOG_FILE}")
        return record

    def _runner_alive(self, record: LocalJobRecord) -> bool:
        if record.runner_pid is not None:
            return process_alive(record.runner_pid, record.runner_identity)
        written = read_runner_pid(self.job_dir(record.job_id))
        if written is None:
            return time.time() - record.submitted_at < RUNNER_START_GRACE_S
        return process_alive(*written)

    # -- queue, find_by_name, cancel ------------------------------------------

    def queue(self) -> list[QueueRow]:
        """Non-terminal jobs, one row per job (an array's row combines its tasks)."""
        _reap_children()
        active = self.jobs_dir / "active"
        try:
            ids = sorted(p.name for p in active.iterdir() if p.name.isdigit())
        except FileNotFoundError:
            return []
        now = time.time()
        rows = []
        for job_id in ids:
            record = self.current_record(job_id)
            if record is None or record.state.terminal:
                # Its runner is gone without tidying up (it tidies up when it ends).
                (active / job_id).unlink(missing_ok=True)
                continue
            rows.append(QueueRow(
                job_id=job_id,
                name=record.name,
                state=record.state,
                elapsed=slurm_duration(record.compute_used_s(now)),
                partition=PARTITION,
                submitted=datetime.fromtimestamp(record.submitted_at).isoformat(
                    timespec="seconds"),
                reason=record.reason or "None",
                limit=slurm_limit(record.time_minutes),
            ))
        return rows

    def find_by_name(self, name: str, live_only: bool = False,
                     home: Path | None = None) -> str | None:
        """The newest id submitted with this name, from one small index file (the home's
        own: ``live_only`` and ``home`` change nothing, every job it holds is this
        home's)."""
        if "/" in name or name.startswith("."):
            return None
        try:
            text = (self.jobs_dir / "names" / name / "latest").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        return text.strip() or None

    def cancel(self, job_id: str) -> bool:
        """Request cancellation; the runner kills the tasks' process groups (TERM,
        then KILL after a grace) and records ``cancelled``. Pending work never
        starts. Unknown and finished jobs: nothing to do, True.

        If the runner is dead its orphaned tasks are killed here directly.
        """
        check_job_id(job_id)
        parent, _, task_part = job_id.partition("_")
        task = int(task_part) if task_part else None
        job_dir = self.job_dir(parent)
        record = read_record(job_dir)
        if record is None or record.state.terminal:
            return True
        if task is not None and (task not in record.tasks or record.tasks[task].state.terminal):
            return True
        write_atomic(cancel_file(job_dir, task), f"{time.time()}\n")
        if self._runner_alive(record):
            if task is None and record.runner_pid is not None:
                _signal(record.runner_pid, signal.SIGTERM)
            return True
        targets = record.tasks.items() if task is None else [(task, record.tasks[task])]
        for _, rec in targets:
            if rec.pgid is not None and not rec.state.terminal and (
                    process_alive(rec.pgid, rec.identity) or group_alive(rec.pgid)):
                _signal(-rec.pgid, signal.SIGKILL)
        return True

    def lane_load(self, partition: str) -> None:
        """Local jobs run on this machine, in no partition: no lane to load."""
        return None


def _observe_job(record: LocalJobRecord, now: float) -> JobObservation:
    return JobObservation(
        job_id=record.job_id,
        state=record.state,
        name=record.name,
        exit_code=record.exit_code,
        elapsed_s=record.compute_used_s(now),
        gpu_seconds=record.gpu_seconds(now),
        reason=record.reason or _first_task_reason(record),
        tasks={k: t.state for k, t in record.tasks.items()} if record.array else {},
        task_elapsed_s={k: t.elapsed_s(now) for k, t in record.tasks.items()}
        if record.array else {},
    )


def _observe_task(job_id: str, record: LocalJobRecord, task: int, now: float) -> JobObservation:
    rec = record.tasks.get(task) if record.array else None
    if rec is None:
        return JobObservation(job_id=job_id, state=JobState.GONE)
    return JobObservation(
        job_id=job_id, state=rec.state, name=record.name, exit_code=rec.exit_code,
        elapsed_s=rec.elapsed_s(now), gpu_seconds=record.gpus * rec.elapsed_s(now),
        reason=rec.reason,
    )


def _first_task_reason(record: LocalJobRecord) -> str | None:
    return next((t.reason for t in record.tasks.values() if t.reason), None)


def _signal(pid: int, sig: int) -> None:
    """Send a signal; a process already gone is what we wanted anyway."""
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _record_runner_pid(job_dir: Path, pid: int) -> None:
    identity = process_identity(pid) or ""
    write_atomic(job_dir / RUNNER_PID_FILE, f"{pid} {identity}\n")


def _reap_children() -> None:
    _children[:] = [proc for proc in _children if proc.poll() is None]


def parse_begin(value: str | None, now: float) -> float | None:
    """``--begin`` as sbatch takes it: ``now``, ``now+N[unit]`` or an ISO local time."""
    if value is None:
        return None
    match = _BEGIN_RE.match(value.strip())
    if match:
        amount, unit = match.group(1) or "0", match.group(2) or ""
        return now + int(amount) * _UNIT_S[unit]
    try:
        return datetime.fromisoformat(value.strip()).timestamp()
    except ValueError:
        raise ComputeError(f"invalid begin time {value!r}; use now+<N>[s|m|h|d|w] "
                           f"or a local ISO time such as 2030-01-31T12:00:00") from None


def slurm_duration(seconds: int) -> str:
    """Elapsed time as squeue prints ``%M``: ``0:05``, ``1:02:03``, ``2-01:00:00``."""
    days, rest = divmod(max(0, seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def slurm_limit(minutes: int) -> str:
    """A time limit as squeue prints ``%l``: ``1:00``, ``1:30:00``, ``2-00:00:00``."""
    return slurm_duration(minutes * 60)
