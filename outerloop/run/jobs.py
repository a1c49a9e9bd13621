"""Job specs the kernel submits for a run: attempt legs, launches, evals.

Names are deterministic (``ol-<run>-...``) so a write-ahead intent can be settled by
looking the job up by name after a crash. No job gets a secret: the environment is
the allowlist the backend adds plus what is listed here. Launches and evals run
agent-written code, so their command runs sandboxed (``outerloop.sandbox``): it reads
and writes only its own checkout and its job's scratch HOME, never the log dir where
the job script writes ``exit_code`` and ``finished``.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from outerloop.compute import jobenv
from outerloop.compute.base import JobSpec
from outerloop.config import Settings
from outerloop.kinds import JobKind
from outerloop.run.paths import RunPaths
from outerloop.settings_snapshot import SNAPSHOT_VAR, snapshot_path

PREFIX = "ol"
TASK_VAR = "${SLURM_ARRAY_TASK_ID:-${OUTERLOOP_ARRAY_TASK_ID:-}}"


def job_name(run_id: str, *parts: str | int) -> str:
    return "-".join([PREFIX, run_id, *(str(p) for p in parts)])


def _placed(spec: JobSpec, settings: Settings, kind: JobKind) -> JobSpec:
    """The spec placed as ``[compute.<kind>]`` says (falling back to ``[compute]``)."""
    return jobenv.place(spec, settings.compute, kind)


def _kernel_env(settings: Settings, run_id: str) -> dict[str, str]:
    """A kernel leg's environment: its run, and the effective settings of the process
    that submits it (the executor writes the snapshot before submitting)."""
    return {"OUTERLOOP_RUN": run_id, SNAPSHOT_VAR: str(snapshot_path(settings))}


def attempt_spec(settings: Settings, run_id: str, verb: str, name: str, minutes: int,
                 after_any: tuple[str, ...] = ()) -> JobSpec:
    """A kernel leg: ``outerloop attempt start|wake RUN`` inside a job."""
    paths = RunPaths.of(settings.home, run_id)
    argv = [sys.executable, "-m", "outerloop", "attempt", verb, run_id,
            "--home", str(settings.home)]
    return _placed(JobSpec(
        name=name, command=shlex.join(argv), workdir=str(paths.root),
        log_dir=str(paths.job_dir(name)), time_minutes=minutes, after_any=after_any,
        env=_kernel_env(settings, run_id),
    ), settings, "session")


def _sandboxed(settings: Settings, job_dir: Path, command: str, tree: Path,
               deps: Path | None = None) -> tuple[str, dict[str, str]]:
    """``command`` confined to the shell's ``$PWD`` (``tree`` or a task's checkout in
    it) and the job's scratch HOME (and reading ``deps``, the target's dependency
    cache), and the env it needs (``TMPDIR`` there)."""
    from outerloop.sandbox import for_run, scratch_tmp  # Landlock, bwrap: for a job only

    scratch = job_dir / JOB_HOME
    return (for_run(settings).with_deps(deps).shell(command, scratch, cwd_under=tree),
            {"HOME": str(scratch), "TMPDIR": scratch_tmp(scratch)})


JOB_HOME = "home"


def launch_spec(settings: Settings, run_id: str, name: str, command: str, minutes: int,
                array: int | None, concurrency: int | None, *, gpus: int = 0,
                nodes: int = 1, after_any: tuple[str, ...] = (),
                deps: Path | None = None) -> JobSpec:
    """An experiment on the seal: each task runs in its own fresh checkout
    (``trees/<name>/`` or ``trees/<name>/<i>/``) with ``SWEEP_INDEX`` set; ``gpus``
    per task, ``after_any`` the launches it must wait for (the GPU cap), ``deps`` the
    target's dependency cache it reads."""
    paths = RunPaths.of(settings.home, run_id)
    tree = paths.tree(name)
    confined, env = _sandboxed(settings, paths.job_dir(name), command, tree, deps)
    wrapper = (
        f'T={TASK_VAR}; cd {shlex.quote(str(tree))}${{T:+/$T}} && '
        f'export SWEEP_INDEX="${{T:-0}}" && {confined}'
    )
    return _placed(JobSpec(
        name=name, command=wrapper, workdir=str(tree), log_dir=str(paths.job_dir(name)),
        time_minutes=minutes, nice=settings.compute.launch_nice,
        array_size=array, array_concurrency=concurrency if array else None,
        env={"OUTERLOOP_RUN": run_id, **env}, requeue=True, gpus=gpus, nodes=nodes,
        after_any=after_any,
    ), settings, "launch")


def measure_spec(settings: Settings, run_id: str, name: str, minutes: int, *, gpus: int = 0,
                 nodes: int = 1, after_any: tuple[str, ...] = ()) -> JobSpec:
    """An eval pair: ``outerloop attempt measure RUN NAME`` runs both sides of the plan
    the kernel wrote (``attempt/pairs.py``) one after the other, each sandboxed, on the
    benchmark's ``gpus`` and ``nodes``, placed as ``[compute.eval]`` says."""
    paths = RunPaths.of(settings.home, run_id)
    argv = [sys.executable, "-m", "outerloop", "attempt", "measure", run_id, name,
            "--home", str(settings.home)]
    return _placed(JobSpec(
        name=name, command=shlex.join(argv), workdir=str(paths.job_dir(name)),
        log_dir=str(paths.job_dir(name)), time_minutes=minutes,
        env=_kernel_env(settings, run_id), requeue=True, gpus=gpus, nodes=nodes,
        after_any=after_any,
    ), settings, "eval")
