"""The detached runner of one local job (``outerloop job run --jobs-dir DIR ID``).

``LocalCompute.submit`` starts it in its own session and returns. The runner is the
only writer of the job's ``state.json`` from then on. It:

1. waits (its gate, ``local_gate``, did the long wait in bash; the runner checks
   again) while ``begin`` is in the future, while any ``after_any`` dependency has
   not ended (any terminal state counts, failures included; an id with no record
   counts as ended, as in Slurm once a job has left its memory), and, for
   ``singleton``, while an older job of the same name has not ended;
2. runs each task as ``bash -c <command>`` in ``spec.workdir``, in its own process
   group, with an allowlisted environment, at most ``array_concurrency`` at once (a
   runner forked by ``local_fork`` forks a task that is the kernel's own ``-m outerloop``
   command instead, in the same session, directory and environment);
3. at a task's time limit sends TERM to its whole process group and KILL after
   ``KILL_GRACE_S`` -> ``timeout``; processes left behind by a task that ended on
   its own are killed too (Slurm kills a finished job's leftovers), and so is every
   process the task left below the runner, a subreaper, even one that left the group
   with ``setsid`` (``reaper.kill_descendants``), before the task's result is written;
4. writes ``exit_code`` and a ``finished`` marker into each started task's log dir.

A cancel request (the ``cancel`` file, plus SIGTERM to wake the runner) ends
pending tasks before they start and kills running ones -> ``cancelled``. A SIGTERM
without a cancel request (the machine shutting down) ends the job ``node_fail``:
an infrastructure failure, not a verdict on the work. If the runner itself
crashes it records ``node_fail`` with the error; if it is killed outright,
observers see its pid gone and report ``node_fail`` themselves.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol

from outerloop.compute import local_fork
from outerloop.compute.base import JobSpec, JobState, check_job_id
from outerloop.compute.jobenv import local_command
from outerloop.compute.local import LocalCompute
from outerloop.compute.local_gpus import DevicePool, Devices, release
from outerloop.compute.local_records import (
    CANCEL_FILE,
    RUNNER_LOCK_FILE,
    LocalJobRecord,
    TaskRecord,
    group_alive,
    live_runners,
    process_identity,
    read_record,
    read_spec,
    write_atomic,
    write_record,
)
from outerloop.sandbox import reaper

KILL_GRACE_S = 5.0
POLL_RUNNING_S = 0.1
HELD_EXIT = 125  # the runner vanished before the task was recorded (never seen)
POLL_WAIT_MIN_S = 0.05
POLL_WAIT_MAX_S = 0.25
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class _Process(Protocol):
    """A started task's process: ``subprocess.Popen`` or ``local_fork.ForkedTask``."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...


@dataclass
class _Live:
    """A started task the runner is watching."""

    task: int
    proc: _Process
    deadline: float
    why: JobState | None = None
    term_at: float | None = None
    killed: bool = False
    devices: Devices | None = None


def run_job(jobs_dir: Path, job_id: str, *, signalled: bool = False) -> int:
    """Run one job to its end. Returns 0, also when another runner already owns
    the job (a second runner must never start the work twice). ``signalled``: the
    job's gate was sent SIGTERM before it handed over (``local_gate``), which the
    runner takes as its own."""
    check_job_id(job_id)
    compute = LocalCompute(jobs_dir)
    job_dir = compute.job_dir(job_id)
    with open(job_dir / RUNNER_LOCK_FILE, "a+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"job {job_id}: another runner owns it; exiting", file=sys.stderr)
            return 0
        record = read_record(job_dir)
        if record is None or record.state.terminal:
            return 0
        runner = _Runner(compute, job_dir, read_spec(job_dir), record)
        runner.signalled = signalled
        try:
            runner.run()
        except BaseException as exc:
            runner.abort(exc)
            raise
    return 0


def job_environment(spec: JobSpec, record: LocalJobRecord, task: int | None,
                    devices: Devices | None = None) -> dict[str, str]:
    """Allowlisted caller variables, HOME per job, ``spec.env``, then the job's ids
    and its stand-in GPUs (``CUDA_VISIBLE_DEVICES``).

    Nothing else of the caller's environment (tokens, keys) reaches the job.
    """
    env = dict(record.base_env)
    env.setdefault("PATH", DEFAULT_PATH)
    env["HOME"] = str(spec.log_path / "home")
    env.update(spec.env)
    env["OUTERLOOP_JOB_ID"] = record.job_id
    env["OUTERLOOP_JOB_NAME"] = record.name
    if task is not None:
        env["OUTERLOOP_ARRAY_TASK_ID"] = str(task)
        env["SLURM_ARRAY_TASK_ID"] = str(task)
        env["SLURM_ARRAY_JOB_ID"] = record.job_id
        env["SLURM_ARRAY_TASK_COUNT"] = str(len(record.tasks))
    if devices is not None and devices.ids:
        env["CUDA_VISIBLE_DEVICES"] = devices.visible
    return env


class _Runner:
    def __init__(self, compute: LocalCompute, job_dir: Path, spec: JobSpec,
                 record: LocalJobRecord) -> None:
        self.compute = compute
        self.job_dir = job_dir
        self.spec = spec
        self.record = record
        self.live: dict[int, _Live] = {}
        self.ended_ids: set[str] = set()
        self.signalled = False
        self.handled_cancels: set[int] = set()
        self.gpus = DevicePool(compute.jobs_dir, record.gpu_pool)

    def run(self) -> None:
        self.record.runner_pid = os.getpid()
        self.record.runner_identity = process_identity(os.getpid())
        self._save()
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        reaper.become_subreaper()
        if self._wait_to_start():
            self._run_tasks()
        reaper.kill_descendants(spare=live_runners(self.compute.jobs_dir))
        self._finish()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signalled = True

    # -- requests --------------------------------------------------------------

    def _requests(self) -> tuple[JobState | None, set[int]]:
        """(how the whole job must stop, if it must; tasks whose cancel was asked),
        from one listing of the job directory."""
        names = os.listdir(self.job_dir)
        tasks = {int(n.split(".", 1)[1]) for n in names
                 if n.startswith(CANCEL_FILE + ".") and n.split(".", 1)[1].isdigit()}
        if CANCEL_FILE in names:
            return JobState.CANCELLED, tasks - self.handled_cancels
        if self.signalled:
            return JobState.NODE_FAIL, tasks - self.handled_cancels
        return None, tasks - self.handled_cancels

    def _end_unstarted(self, task: int, state: JobState) -> None:
        rec = self.record.tasks[task]
        rec.state = state
        rec.ended_at = time.time()
        rec.reason = ("cancelled before it started" if state == JobState.CANCELLED
                      else "runner was terminated (machine shutting down?) before it started")

    # -- waiting ---------------------------------------------------------------

    def _wait_to_start(self) -> bool:
        """Wait for begin, dependencies and singleton; False if cancelled meanwhile."""
        delay = POLL_WAIT_MIN_S
        while True:
            stop, cancels = self._requests()
            for task in cancels:
                self.handled_cancels.add(task)
                if task in self.record.tasks and not self.record.tasks[task].state.terminal:
                    self._end_unstarted(task, JobState.CANCELLED)
                    self._save()
            if stop is not None:
                for task, rec in self.record.tasks.items():
                    if not rec.state.terminal:
                        self._end_unstarted(task, stop)
                return False
            if all(rec.state.terminal for rec in self.record.tasks.values()):
                return False
            blocker = self._blocker()
            if blocker is None:
                return True
            if blocker != self.record.reason:
                self.record.reason = blocker
                self._save()
            time.sleep(delay)
            delay = min(delay * 1.5, POLL_WAIT_MAX_S)

    def _blocker(self) -> str | None:
        """squeue's pending reason, or None when the job may start."""
        return self.compute.pending_reason(self.spec, self.record.job_id,
                                           self.record.begin_at, self.ended_ids)

    # -- running ---------------------------------------------------------------

    def _run_tasks(self) -> None:
        pending = [k for k in sorted(self.record.tasks)
                   if self.record.tasks[k].state == JobState.PENDING]
        limit = (self.spec.array_concurrency or len(pending)) if self.record.array else 1
        while True:
            stop, cancels = self._requests()
            if stop is not None:
                for task in pending:
                    self._end_unstarted(task, stop)
                pending = []
                for live in list(self.live.values()):
                    self._terminate(live, stop)
            for task in cancels:
                self.handled_cancels.add(task)
                if task in pending:
                    pending.remove(task)
                    self._end_unstarted(task, JobState.CANCELLED)
                    self._save()
                elif task in self.live:
                    self._terminate(self.live[task], JobState.CANCELLED)
            short_of_gpus = False
            while pending and len(self.live) < max(1, limit):
                devices = self.gpus.acquire(self.spec.gpus)
                if devices is None:
                    short_of_gpus = True
                    break
                self._start(pending.pop(0), devices)
            for live in list(self.live.values()):
                self._check(live)
            if not self.live and not pending:
                return
            reason = ("Resources" if short_of_gpus else
                      "JobArrayTaskLimit" if pending else "None")
            if reason != self.record.reason:
                self.record.reason = reason
                self._save()
            time.sleep(POLL_RUNNING_S)

    def _start(self, task: int, devices: Devices | None = None) -> None:
        rec = self.record.tasks[task]
        log_dir = self.spec.task_log_dir(task if self.record.array else None)
        now = time.time()
        rec.started_at = now
        go_write = -1
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / "finished").unlink(missing_ok=True)
            (log_dir / "exit_code").unlink(missing_ok=True)
            if "HOME" not in self.spec.env:
                (self.spec.log_path / "home").mkdir(exist_ok=True)
            env = job_environment(self.spec, self.record, task if self.record.array else None,
                                  devices)
            go_read, go_write = os.pipe()
            command = local_command(self.spec)
            kernel = local_fork.kernel_words(command) if local_fork.forks_task(env) else None
            with open(log_dir / "stdout", "ab") as out, open(log_dir / "stderr", "ab") as err:
                try:
                    proc: _Process = local_fork.start_task(
                        kernel, cwd=self.spec.workdir, env=env, out_fd=out.fileno(),
                        err_fd=err.fileno(), go_fd=go_read, held_exit=HELD_EXIT,
                    ) if kernel is not None else subprocess.Popen(
                        ["bash", "-c", _held(command, go_read)],
                        cwd=self.spec.workdir, env=env,
                        stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                        start_new_session=True, close_fds=True, pass_fds=(go_read,),
                    )
                finally:
                    os.close(go_read)
        except OSError as exc:
            if go_write >= 0:
                os.close(go_write)
            release(devices)
            rec.state = JobState.FAILED
            rec.exit_code = 127
            rec.ended_at = time.time()
            rec.reason = f"could not start the command: {exc}"
            _write_result(log_dir, 127, note=rec.reason)
            self._save()
            return
        rec.state = JobState.RUNNING
        rec.pgid = proc.pid
        rec.identity = process_identity(proc.pid)
        rec.reason = None
        self.live[task] = _Live(task, proc, deadline=now + self.record.time_limit_s,
                                devices=devices)
        self._save()
        _release(go_write)

    def _terminate(self, live: _Live, why: JobState) -> None:
        """TERM the task's whole group now; ``_check`` sends KILL after the grace."""
        if live.why is not None:
            return
        live.why = why
        live.term_at = time.time()
        _killpg(live.proc.pid, signal.SIGTERM)
        self.record.tasks[live.task].state = JobState.COMPLETING
        self._save()

    def _check(self, live: _Live) -> None:
        now = time.time()
        rc = live.proc.poll()
        if rc is None and live.why is None and now >= live.deadline:
            self._terminate(live, JobState.TIMEOUT)
        if live.term_at is not None and not live.killed and now - live.term_at >= KILL_GRACE_S:
            _killpg(live.proc.pid, signal.SIGKILL)
            live.killed = True
        if rc is None:
            return
        if live.why is None:
            _killpg(live.proc.pid, signal.SIGKILL)
        _reap_group(live.proc.pid)
        if live.why is not None and not live.killed and group_alive(live.proc.pid):
            return
        self._end_leftovers(live)
        self._end_task(live, rc)

    def _end_leftovers(self, live: _Live) -> None:
        """Kill what the ended task left below the runner outside every other live
        task's tree: ``setsid``/double-forked processes whose sandbox wrapper (their
        reaper) was SIGKILLed were reparented to us, the subreaper. The runners of jobs
        this job submitted were adopted the same way and are spared. The task's result
        is written only after, so no leftover races it."""
        others = frozenset(o.proc.pid for o in self.live.values() if o is not live)
        reaper.kill_descendants(spare=others | live_runners(self.compute.jobs_dir))

    def _end_task(self, live: _Live, rc: int) -> None:
        code = rc if rc >= 0 else 128 - rc
        rec = self.record.tasks[live.task]
        rec.exit_code = code
        rec.ended_at = time.time()
        if live.why == JobState.TIMEOUT:
            rec.state = JobState.TIMEOUT
            rec.reason = f"time limit of {self.record.time_limit_s:g} s reached"
        elif live.why is not None:
            rec.state = live.why
            rec.reason = "cancelled" if live.why == JobState.CANCELLED else "runner terminated"
        else:
            rec.state = JobState.COMPLETED if code == 0 else JobState.FAILED
            rec.reason = None if code == 0 else f"exit code {code}"
        log_dir = self.spec.task_log_dir(live.task if self.record.array else None)
        _write_result(log_dir, code)
        release(live.devices)
        del self.live[live.task]
        self._save()

    # -- ending ----------------------------------------------------------------

    def _finish(self) -> None:
        self.record.reason = _first_reason(self.record)
        self._save()
        (self.compute.jobs_dir / "active" / self.record.job_id).unlink(missing_ok=True)

    def abort(self, exc: BaseException) -> None:
        """The runner failed: kill what it started and say so, as node_fail."""
        try:
            for live in self.live.values():
                _killpg(live.proc.pid, signal.SIGKILL)
            for rec in self.record.tasks.values():
                if not rec.state.terminal:
                    rec.state = JobState.NODE_FAIL
                    rec.reason = f"local runner failed: {exc!r}"
            self._finish()
        except Exception as inner:
            print(f"job {self.record.job_id}: could not record the failure: {inner!r}",
                  file=sys.stderr)

    def _save(self) -> None:
        """Write the record; an ended job's reason is settled in the same write, so no
        reader ever sees it ended with a pending reason (``None``, ``BeginTime``)."""
        self.record.summarize()
        if self.record.state.terminal:
            self.record.reason = _first_reason(self.record)
        write_record(self.job_dir, self.record)


def _first_reason(record: LocalJobRecord) -> str | None:
    if record.state == JobState.COMPLETED:
        return None
    tasks: list[TaskRecord] = [t for _, t in sorted(record.tasks.items())]
    return next((t.reason for t in tasks if t.reason and t.state == record.state), None)


def _write_result(log_dir: Path, code: int, note: str | None = None) -> None:
    """``exit_code`` then ``finished``: a reader that sees the marker sees the code."""
    try:
        if note:
            with open(log_dir / "stderr", "a", encoding="utf-8") as err:
                err.write(f"outerloop: {note}\n")
        write_atomic(log_dir / "exit_code", f"{code}\n")
        write_atomic(log_dir / "finished", f"{time.time():.3f}\n")
    except OSError as exc:
        print(f"cannot write results into {log_dir}: {exc}", file=sys.stderr)


def _held(command: str, go_fd: int) -> str:
    """``command`` held until the runner has recorded the task's process group: it
    reads one line from ``go_fd`` first. A runner killed before that record would
    leave a task nobody can find (cancel kills by the recorded group); its end of the
    pipe closes with it, the read meets end-of-file and the task never starts."""
    return f"IFS= read -r _ <&{go_fd} || exit {HELD_EXIT}; exec {go_fd}<&-\n{command}"


def _release(go_write: int) -> None:
    try:
        os.write(go_write, b"go\n")
    except OSError:
        pass  # the task died before reading: its exit code tells
    finally:
        os.close(go_write)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _reap_group(pgid: int) -> None:
    """Reap the group's orphans reparented to us (we are their subreaper), so a
    dead group does not linger as zombies where PID 1 does not reap."""
    while True:
        try:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
