"""Inside an eval pair's job: run its two sides one after the other, each confined.

``outerloop attempt measure RUN JOB`` (the pair job's command) reads the plan the
kernel wrote (``attempt/pairs.py``) and, for each side in the plan's order:

1. runs the benchmark's ``command`` sandboxed in the side's checkout, with the side's
   own scratch HOME and TMPDIR, the same variables as the other side, no declared
   writable path (a shared cache would carry state from a session into an eval) and
   no eval-only path; stdout and stderr go to files the side cannot reach;
2. ends every process the side started before the next side begins (this process is
   a subreaper for the side's lifetime: ``reaper.tree_ends``), so a daemon of one side
   never runs beside the other, nor into the next job;
3. with a trusted scorer: copies the side's ``outputs`` out of its checkout (links
   refused, size bounded) and runs ``score`` from a fresh base checkout in its own
   sandbox, the one process that may read the ``eval_only`` paths, and the one that
   gets ``OUTERLOOP_SCORE_SEED`` (``score_seed.py``): the seed that draws the
   benchmark's hidden truth is never one the side's command could read.

A side that outlives its limit, floods stdout past ``MAX_STDOUT_BYTES`` or writes no
outputs gets a ``problem`` file naming why; the gate reads it as an error, never a
number. The job itself exits 0 once both sides were run: what each measured is read
by the wake.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from outerloop import score_seed
from outerloop.attempt import pairs
from outerloop.config import Settings, environ
from outerloop.run.paths import RunPaths
from outerloop.sandbox import beneath, for_run, reaper

MAX_STDOUT_BYTES = 256 * 1024 * 1024
"""More stdout than this from one side is a problem, not a measurement (the disk)."""
MAX_OUTPUT_BYTES = 2 * 1024 * 1024 * 1024
MAX_OUTPUT_FILES = 100_000
POLL_MIN_S = 0.01
POLL_MAX_S = 0.25
KILL_GRACE_S = 5.0
SWEEP_INDEX = "SWEEP_INDEX"
OUTPUTS_VAR = "OUTERLOOP_OUTPUTS"
KERNEL_VARS = ("OUTERLOOP_",)
EXIT_FILE = "exit_code"
ELAPSED_FILE = "elapsed_s"


def run_pair(settings: Settings, run_id: str, name: str) -> int:
    """Run pair job ``name`` of ``run_id``; 0 once each side ran (whatever it measured),
    2 when there is no readable plan."""
    paths = RunPaths.of(settings.home, run_id)
    plan = pairs.read_plan(paths, name)
    if plan is None:
        print(f"outerloop measure: no readable plan at {pairs.plan_path(paths, name)}")
        return 2
    for slot, side in enumerate(plan.sides):
        _run_side(settings, paths, name, plan, slot, side)
    return 0


def _side_env(plan: pairs.PairPlan, scratch: Path) -> dict[str, str]:
    """The same variables for either side: the job's, less the kernel's own
    (``OUTERLOOP_*``: nothing says a run, a job or an eval), plus the seed, HOME and the
    index a one-task launch also gets."""
    env = {k: v for k, v in environ().items() if not k.startswith(KERNEL_VARS)}
    env["HOME"] = str(scratch)
    env[SWEEP_INDEX] = "0"
    if plan.seed_env:
        env[plan.seed_env] = str(plan.seed)
    return env


def _run_side(settings: Settings, paths: RunPaths, name: str, plan: pairs.PairPlan,
              slot: int, side: pairs.SidePlan) -> None:
    where = pairs.side_dir(paths, name, slot)
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    scratch = where / pairs.SIDE_HOME
    confinement = for_run(settings).with_deps(plan.deps)
    argv, env = confinement.command(
        ["bash", "-c", plan.command], _side_env(plan, scratch), workdir=Path(side.tree),
        scratch=scratch, declared_writes=False)
    problem = _run(argv, env, Path(side.tree), where, plan.minutes)
    if problem is not None or plan.score is None or side.score_tree is None:
        _note(where, problem)
        return
    scored = pairs.score_dir(paths, name, slot)
    scored.mkdir(parents=True, exist_ok=True, mode=0o700)
    score_home = scored / pairs.SIDE_HOME
    outputs = score_home / pairs.OUTPUTS_DIR  # inside the scorer's own scratch
    copied = _copy_outputs(Path(side.tree), plan.outputs or "", outputs)
    if copied is not None:
        _note(scored, copied)
        return
    env = _side_env(plan, score_home)
    env[OUTPUTS_VAR] = str(outputs / Path(plan.outputs or "").name)
    env[score_seed.SCORE_SEED_VAR] = str(
        score_seed.for_pair(settings.home, plan.run_id, plan.benchmark, plan.seed))
    argv, env = confinement.command(
        ["bash", "-c", plan.score], env, workdir=Path(side.score_tree), scratch=score_home,
        declared_writes=False, scorer=True)
    _note(scored, _run(argv, env, Path(side.score_tree), scored, plan.minutes))
    # the copy served its purpose (the side's checkout keeps the original until the run
    # is cleaned): up to MAX_OUTPUT_BYTES per side need not sit in the job logs
    beneath.remove(score_home, pairs.OUTPUTS_DIR)


def _note(where: Path, problem: str | None) -> None:
    if problem is not None:
        (where / pairs.PROBLEM_FILE).write_text(problem + "\n", encoding="utf-8")


def _run(argv: list[str], env: Mapping[str, str], cwd: Path, where: Path,
         minutes: int) -> str | None:
    """Run ``argv`` with stdout/stderr in ``where``; every process it started is dead
    on return. The exit code goes to ``where/exit_code``; returns a problem or None."""
    deadline = time.monotonic() + minutes * 60
    problem = None
    with (where / "stdout").open("wb") as out, (where / "stderr").open("wb") as err, \
            reaper.tree_ends():
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True,
                                close_fds=True)
        delay = POLL_MIN_S
        while proc.poll() is None:
            if time.monotonic() > deadline:
                problem = f"ran past its limit of {minutes} min and was stopped"
            elif os.fstat(out.fileno()).st_size > MAX_STDOUT_BYTES:
                problem = (f"printed more than {MAX_STDOUT_BYTES // (1024 * 1024)} MiB "
                           f"on stdout and was stopped")
            if problem is not None:
                _stop(proc)
                break
            time.sleep(delay)
            delay = min(delay * 2, POLL_MAX_S)
        code = proc.wait()
    (where / EXIT_FILE).write_text(f"{code}\n", encoding="utf-8")
    elapsed = minutes * 60 - (deadline - time.monotonic())
    (where / ELAPSED_FILE).write_text(f"{elapsed:.3f}\n", encoding="utf-8")
    return problem


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=KILL_GRACE_S)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _copy_outputs(tree: Path, rel: str, dest: Path) -> str | None:
    """Copy ``tree/rel`` (a file or a directory) to ``dest/<its name>`` without
    following a link the side left; returns a problem or None."""
    info = beneath.lstat(tree, rel)
    if info is None:
        return f"the benchmark's command wrote no {rel} (its outputs)"
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    leaf = Path(rel).name
    if stat.S_ISREG(info.st_mode):
        entries = [(rel, info)]
    elif stat.S_ISDIR(info.st_mode):
        entries = list(beneath.walk_files(tree, rel))
    else:
        return f"the outputs {rel} are neither a file nor a directory (a link is refused)"
    total = 0
    if len(entries) > MAX_OUTPUT_FILES:
        return f"the outputs {rel} hold more than {MAX_OUTPUT_FILES} files"
    for path, entry in entries:
        target = dest / leaf / Path(path).relative_to(rel) if path != rel else dest / leaf
        if stat.S_ISDIR(entry.st_mode):
            target.mkdir(parents=True, exist_ok=True)
            continue
        if not stat.S_ISREG(entry.st_mode):
            return f"the outputs hold {path}, which is not a regular file (links are refused)"
        total += entry.st_size
        if total > MAX_OUTPUT_BYTES:
            return f"the outputs {rel} are larger than {MAX_OUTPUT_BYTES // 2**30} GiB"
        target.parent.mkdir(parents=True, exist_ok=True)
        with beneath.open_read(tree, path) as source, target.open("wb") as sink:
            while chunk := source.read(1024 * 1024):
                sink.write(chunk)
    if stat.S_ISDIR(info.st_mode):
        (dest / leaf).mkdir(parents=True, exist_ok=True)
    return None
