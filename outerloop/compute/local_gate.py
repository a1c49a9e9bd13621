"""The bash gate a waiting local job is until it may start (``local_gate.sh``).

A job waiting for its ``begin``, its ``after_any`` dependencies or an older job of its
name (``singleton``) costs one bash process (under 1 MB PSS), not a Python runner
(about 20 MB PSS each): ``LocalCompute.submit`` starts the gate in the runner's place,
and the gate ``exec``s the runner in the same process once the job may start, once a
cancel is asked, or on SIGTERM. The pid ``submit`` wrote in ``runner.pid`` is the
runner's from the first instant to the last, so liveness, ``node_fail`` for a killed
job and ``live_runners`` work as before; the runner re-checks every wait itself, so
what the gate decides can only make it hand over early, never start work twice.

The gate judges a dependency as ``LocalCompute.observe`` does, from the same files:
no ``state.json`` (gone), a terminal state, or a runner no longer alive (pid and
``process_identity`` from ``state.json`` or ``runner.pid``). It reads them with bash
builtins, so a waiting job forks nothing while it polls.
"""

from __future__ import annotations

import math
from pathlib import Path

from outerloop.compute.base import JobSpec, JobState

GATE_SCRIPT = Path(__file__).with_name("local_gate.sh")
GATE_REASON_FILE = "gate.reason"
GATE_REASONS = frozenset({"BeginTime", "Dependency", "Resources"})
TERMINAL_WORDS = " ".join(sorted(state.value for state in JobState if state.terminal))


RUNNER_MODULE = "outerloop.compute.runner_main"
"""The module a local job's runner starts as (``python -m``; ``local_gate.sh`` names it
too): its imports are the runner's only, not the command line's."""


def runner_argv(python: str, jobs_dir: Path, job_id: str) -> list[str]:
    """The argv that starts ``job_id``'s runner when it waits for nothing."""
    return [python, "-m", RUNNER_MODULE, "--jobs-dir", str(jobs_dir), job_id]


def gate_argv(jobs_dir: Path, job_id: str, spec: JobSpec, begin_at: float | None, *,
              python: str, fds: tuple[int, int], grace_s: float,
              gpu_keys: list[str]) -> list[str] | None:
    """The gate's command line, or None when the runner should start at once: the job
    waits for nothing, or it waits for one task of an array (``<id>_<k>``), which the
    gate does not read (the runner then waits in Python, as before). ``gpu_keys``: the
    stand-in GPUs' lock files as ``/proc/locks`` names them, for a job that asks for
    ``gpus``."""
    if begin_at is None and not spec.after_any and not spec.singleton and spec.gpus <= 0:
        return None
    if any("_" in dep for dep in spec.after_any):
        return None
    read_fd, write_fd = fds
    # -p: no BASH_ENV, SHELLOPTS or exported functions from the submitter's environment.
    return ["bash", "-p", str(GATE_SCRIPT), str(jobs_dir), job_id, python,
            str(math.ceil(begin_at) if begin_at is not None else 0),
            spec.name if spec.singleton else "", TERMINAL_WORDS,
            str(read_fd), str(write_fd), str(math.ceil(grace_s)),
            str(max(0, spec.gpus)), " ".join(gpu_keys), *spec.after_any]


def gate_reason(job_dir: Path) -> str | None:
    """What the job's gate last said it waits for, or None (no gate, or a file caught
    between the gate's truncate and its write)."""
    try:
        text = (job_dir / GATE_REASON_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text if text in GATE_REASONS else None
