"""Failures of the machine, not of the agent: a full disk or a quota (issue 22), and
the deployment (issue 23): a job the operator's settings keep from running.

A run's job that dies because the filesystem under it is full (``ENOSPC``) or its
owner's quota is spent (``EDQUOT``) says nothing about the agent's work, so it must
neither end the run nor count against its recoveries: the run waits, the operator is
told which path is full and how to fix it, and the leg is delivered again once space
is back. This module holds the one vocabulary both sides use:

- the job side (``outerloop attempt ...``) exits with ``NO_SPACE_EXIT`` when the error
  that stops it is one of ``NO_SPACE_ERRNOS`` (an exit code needs no space: on a full
  disk the job may not be able to write one byte of its own log);
- the kernel side reads that code, or, for processes it does not control, the words
  ``NO_SPACE_WORDS`` in a job's stderr tail, and measures free space (``measure``) on
  the home's filesystems before it delivers the leg again (``shortage``), with a
  backoff between retries (``retry_after_s``) for what it cannot measure (a quota).

The deployment's vocabulary (``says_deployment``): a kernel job (a climb, wake,
recovery or retry) that the operator's deployment stopped, not the run: a ``[compute]
setup`` line that failed (the job script exits ``SETUP_FAILED_EXIT`` naming the line),
a command that could not start on the node (exit 126 or 127: a missing interpreter, a
work directory the node cannot see), or the job's own finding that the scheduler
refuses what the run needs (``DEPLOY_EXIT``, with a ``DEPLOY_PREFIX`` line: an eval
placement no node can hold). The run waits for the operator's fix, retried with a
backoff (``deploy_retry_after_s``) or at once when the settings change; it never costs
the issue a claim.

The machine's own interruptions (preemption, a node failure, requeues that never
finish) are the third part, at the end: the states that mean "the machine stopped it"
(``INFRASTRUCTURE_STATES``), the words every side uses for them, and the rule that cuts
off a job requeued past ``OVERRUN_FACTOR`` times its limit. The job script announces
each attempt (``attempt_banner``) and forwards TERM for the grace; the observation
(``compute/slurm_parse``) reads the endings; the results (``attempt/results``) and the
eval pairs (``attempt/pair_flow``) tell them from the agent's failures; the sweep
(``kernel/lanes/sweep``) recovers the leg. docs/architecture.md, "Preemption and
infrastructure failure", walks the path.

Pure apart from ``measure`` (one ``statvfs``); imports only ``vocabulary``.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path

from outerloop.vocabulary import JobState

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
NO_SPACE_EXIT = 75
"""``EX_TEMPFAIL`` (sysexits.h): "a temporary failure; retry later". No other exit of a
kernel job uses it (a job script's own codes are 126 and 127)."""
NO_SPACE_WORDS = ("No space left on device", "Disk quota exceeded")
"""``strerror`` of ``ENOSPC`` and ``EDQUOT`` as glibc words them (what Python, git,
pip and most tools print)."""
STDERR_TAIL_BYTES = 8192
"""How much of a dead job's stderr the kernel reads for ``NO_SPACE_WORDS``."""

MIN_FREE_BYTES = 1 << 30
MIN_FREE_FRACTION = 0.05
"""Space is "back" when at least min(1 GiB, 5% of the filesystem) is free: a small
filesystem (a test's tmpfs, a scratch quota) is not held to the 1 GiB a large one is."""
MIN_FREE_INODES = 10_000
RETRY_FIRST_S = 60.0
RETRY_MAX_S = 3600.0
"""After the first retry (at once, once space is seen back), each further death of the
same kind doubles the wait: 60 s, 120 s, ... up to an hour. A quota is invisible to
``statvfs``, so the retry itself is the probe; the backoff keeps it cheap."""


def no_space_error(exc: BaseException) -> OSError | None:
    """The ``ENOSPC``/``EDQUOT`` error behind ``exc`` (itself, or its cause or context,
    however deep), else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in NO_SPACE_ERRNOS:
            return current
        current = current.__cause__ or current.__context__
    return None


_NO_SPACE_RE = re.compile("|".join([*(re.escape(w) for w in NO_SPACE_WORDS),
                                     r"\bENOSPC\b", r"\bEDQUOT\b"]), re.IGNORECASE)
"""The words in any case (Node, hence the agent CLIs, prints ``ENOSPC: no space left on
device``), or the errno's name alone."""


def says_no_space(text: str) -> str | None:
    """The last line of ``text`` naming a full disk or quota, else None."""
    for line in reversed(text.splitlines()):
        if _NO_SPACE_RE.search(line):
            return line.strip()[:300]
    return None


@dataclass(frozen=True, slots=True)
class Space:
    """One filesystem as ``statvfs`` saw it (``error``: it could not be asked)."""

    path: str
    free_bytes: int = 0
    total_bytes: int = 0
    free_inodes: int = 0
    total_inodes: int = 0
    error: str | None = None


def measure(path: Path) -> Space:
    """Free space and inodes of the filesystem holding ``path`` (what an unprivileged
    writer may use: ``f_bavail``, ``f_favail``)."""
    try:
        seen = os.statvfs(path)
    except OSError as exc:
        return Space(path=str(path), error=f"{type(exc).__name__}: {exc.strerror or exc}")
    return Space(path=str(path), free_bytes=seen.f_bavail * seen.f_frsize,
                 total_bytes=seen.f_blocks * seen.f_frsize, free_inodes=seen.f_favail,
                 total_inodes=seen.f_files)


def watched(home: Path, extra: tuple[Path, ...] = ()) -> list[Path]:
    """The paths whose filesystems a run's jobs write: the home, then each of ``extra``
    (its ``runs/``, ``jobs/``) that sits on another filesystem (another ``st_dev``); a
    path that does not exist yet is measured at its nearest existing parent."""
    out: list[Path] = []
    devices: set[int] = set()
    for path in (home, *extra):
        probe = path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            device = probe.stat().st_dev
        except OSError:
            continue
        if device not in devices:
            devices.add(device)
            out.append(path if path.exists() else probe)
    return out


def _mib(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB"


def needed_bytes(space: Space) -> int:
    return min(MIN_FREE_BYTES, int(space.total_bytes * MIN_FREE_FRACTION))


def shortage(space: Space) -> str | None:
    """Why ``space`` is too full to deliver a leg on, naming the path and the figures;
    None when enough is free. Unmeasurable counts as short (nothing is concluded)."""
    if space.error is not None:
        return f"{space.path}: free space unknown ({space.error})"
    need = needed_bytes(space)
    if space.free_bytes < need:
        return (f"{space.path}: {_mib(space.free_bytes)} free of {_mib(space.total_bytes)} "
                f"(needs {_mib(need)})")
    inodes = min(MIN_FREE_INODES, int(space.total_inodes * MIN_FREE_FRACTION))
    if space.total_inodes and space.free_inodes < inodes:
        return (f"{space.path}: {space.free_inodes} inodes free of {space.total_inodes} "
                f"(needs {inodes})")
    return None


def retry_after_s(deaths: int) -> float:
    """How long after the ``deaths``-th death in a row of this kind the next try waits
    (space permitting): none after the first, then 60 s doubling to an hour."""
    if deaths <= 1:
        return 0.0
    return min(RETRY_MAX_S, RETRY_FIRST_S * 2.0 ** (deaths - 2))


FIX = ("fix: free space there (or raise the quota); the run waits and its leg is "
       "delivered again once space is back; it does not end and costs no claim")


SETUP_FAILED_EXIT = 126
"""What a job script exits with when a ``[compute] setup`` line fails (``jobenv``)."""
NOT_STARTED_EXIT = 127
"""What a job script (or the shell) exits with when the command cannot start."""
DEPLOY_EXIT = 78
"""``EX_CONFIG`` (sysexits.h): "something was found in an unconfigured or misconfigured
state". A kernel job exits with it when the deployment keeps the run from going on
(``errors.DeploymentError``), after one ``DEPLOY_PREFIX`` line on stderr."""
DEPLOY_PREFIX = "outerloop: deployment: "
SETUP_FAILED_WORDS = "[compute] setup line"
"""How the job script names a failing setup line: ``outerloop: [compute] setup line N
failed: <line>``."""
_NOT_STARTED_RE = re.compile(r"No such file or directory|command not found|cannot enter|"
                             r"Permission denied|cannot execute|not found", re.IGNORECASE)
MAX_CAUSE_CHARS = 1000
"""A deployment cause is kept whole up to this: the job's line carries the fix."""
DEPLOY_RETRY_FIRST_S = 60.0
DEPLOY_RETRY_MAX_S = 3600.0


def says_deployment(text: str, exit_code: int | None) -> str | None:
    """The line of a kernel job's stderr saying the deployment stopped it, or None.

    Each kind counts only with its exit code, so a line the job printed for another
    reason is never read as one: exit ``SETUP_FAILED_EXIT`` with the setup line's
    words; ``DEPLOY_EXIT`` with the ``DEPLOY_PREFIX`` line; exit 126 or 127 otherwise
    with the shell's last word on what could not start (or that code alone)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if exit_code == SETUP_FAILED_EXIT:
        for line in reversed(lines):
            if SETUP_FAILED_WORDS in line and "failed" in line:
                return line[:MAX_CAUSE_CHARS]
    if exit_code == DEPLOY_EXIT:
        for line in reversed(lines):
            if line.startswith(DEPLOY_PREFIX):
                return line[:MAX_CAUSE_CHARS]
        return f"the job exited {DEPLOY_EXIT}: the deployment cannot run this run's work"
    if exit_code in (SETUP_FAILED_EXIT, NOT_STARTED_EXIT):
        for line in reversed(lines):
            if _NOT_STARTED_RE.search(line):
                return line[:MAX_CAUSE_CHARS]
        return f"the job's command could not start on its node (exit {exit_code})"
    return None


TRACEBACK_HEAD = "Traceback (most recent call last):"
_EXCEPTION_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,8}")
MAX_EXCEPTION_NAME_CHARS = 100


def crash_name(text: str) -> str | None:
    """The name of the exception a Python traceback in ``text`` (a kernel job's stderr
    tail) ended with (``IsADirectoryError``, ``decimal.Overflow``), or None when the
    tail holds no traceback. The name only, never the message: a message carries the
    home's paths, which are the operator's, and the name is what an issue may read."""
    head = text.rfind(TRACEBACK_HEAD)
    if head == -1:
        return None
    for line in reversed(text[head:].splitlines()):
        if not line.strip() or line.startswith((" ", "\t")):
            continue
        name = line.split(":", 1)[0].strip()
        if len(name) <= MAX_EXCEPTION_NAME_CHARS and _EXCEPTION_NAME_RE.fullmatch(name):
            return name
        return None
    return None


def deploy_retry_after_s(deaths: int) -> float:
    """How long after the ``deaths``-th death in a row of the deployment the next try
    waits, unless the settings changed meanwhile: 60 s doubling to an hour (a broken
    setting fails again at once: each try is a probe of the operator's fix)."""
    return min(DEPLOY_RETRY_MAX_S, DEPLOY_RETRY_FIRST_S * 2.0 ** max(0, deaths - 1))


DEPLOY_FIX = ("fix: correct it in outerloop.toml ([compute] setup, placement, "
              "time_minutes, pass_env, [harness] binary) or on the nodes; the run waits, "
              "is tried again at the next tick after the settings change (else with a "
              "backoff up to an hour), never ends of it and costs no claim")


SCHEDULER_REFUSED = "sbatch refused job"
"""How a clear refusal of a job by the scheduler is worded (``compute/slurm``): an
account, QOS or partition it does not accept, an option it rejects."""
REFUSED_FIX = ("fix: the scheduler refuses the job as the settings place it: correct the "
               "partition, account, qos or extra_sbatch of [compute.session] (or [compute]) "
               "in outerloop.toml; the run is started by itself once the job is accepted, "
               "and costs no claim")


def refused_fix(error: str) -> str | None:
    """``REFUSED_FIX`` when ``error`` is the scheduler's clear refusal, else None."""
    return REFUSED_FIX if SCHEDULER_REFUSED in error else None


INFRASTRUCTURE_STATES = frozenset({JobState.NODE_FAIL, JobState.INTERRUPTED})
"""Ends that are the machine's, not a verdict on the work: preempted and not requeued,
cut off after endless requeues (``interrupted``), or a node (or a local runner) that
died (``node_fail``). A leg that ends so is recovered, an eval so is measured again."""
OVERRUN_FACTOR = 2
"""A job whose attempts (requeues after preemption) used more than this many times its
time limit is cancelled and read ``interrupted``: requeued forever, it would hold its
run for ever."""
PREEMPTED_REASON = "preempted and not requeued: infrastructure, not a verdict on the work"
INTERRUPTED_NOTE = "interrupted by the cluster (preempted or node failure): infrastructure"
"""What an interrupted launch's results tell the agent: not that its code failed."""
NODE_FAILED = "the node it was to run on failed before the agent started"
REQUEUED_WORDS = "requeued"
"""What the observation's reason of a job Slurm requeued says (``compute/slurm_parse``:
``attempt N (requeued Mx)``)."""


def requeued_line(job_id: str, reason: str) -> str:
    """What ``status`` says of a run whose leg job waits to run again after its node
    failed or it was preempted: the machine's, with the fix if the node stays down."""
    return (f"its job {job_id} waits to run again ({reason}): its node failed or it was "
            f"preempted, the machine's failure, not the run's, and no claim is spent; it "
            f"runs again by itself; fix: if the node stays down, return it to service "
            f"(`sinfo -R`, `scontrol update nodename=NODE state=resume`)")
"""What the issue is told when a run's first leg died of the machine twice."""


def overrun_reason(elapsed_s: int) -> str:
    """The observation's reason for a job cut off after ``OVERRUN_FACTOR`` x its limit."""
    return (f"cancelled after its attempts used {elapsed_s} s, over {OVERRUN_FACTOR}x its "
            f"time limit (preempted and requeued repeatedly): infrastructure, not a verdict")


def is_overrun(used_s: int, limit_minutes: int | None) -> bool:
    """Whether attempts that used ``used_s`` in all are past ``OVERRUN_FACTOR`` x the limit."""
    return limit_minutes is not None and used_s > OVERRUN_FACTOR * limit_minutes * 60


def attempt_banner() -> str:
    """The job script's line announcing each attempt in the job's stderr: a requeued or
    preempted job runs its script again, and the log shows each start."""
    return ('echo "outerloop: attempt ${SLURM_RESTART_COUNT:-0} of job $OUTERLOOP_JOB_ID '
            'starts on $(hostname) at $(date -u +%FT%TZ)" >>"$OUTERLOOP_LOG/stderr"')
