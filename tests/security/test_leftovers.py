"""A child's processes end with it: ``setsid -f`` and double-forked daemons included.

Before, a session step, a launch or an eval could leave a process behind that escaped
the per-step group kill and the local runner's ``killpg``: it kept CPU, raced the
kernel's work after the leg and crashed a wake job. Now every confined child runs
under a reaper (the Landlock wrapper, bwrap's PID namespace, the ``off`` reaper), and
the local runner, itself a subreaper, kills what a task left when the wrapper was
SIGKILLed. Each test leaves sleepers that ignore TERM and checks none survives.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from outerloop.compute.base import Compute, JobSpec, JobState
from outerloop.config import Settings, load_settings
from outerloop.harness.env import run_process_group
from outerloop.sandbox.confine import Confinement, scratch_tmp
from tests.local_slurm import NO_REAL_SLURM
from tests.security.fixtures import (
    UNPRIVILEGED_UID,
    as_user,
    backend,
    children_of,
    chown,
    fixture,
    skip_reason,
)
from tests.security.leftovers import escapes, kill_all, marker, survivors, survivors_after
from tests.security.test_hostile_agent import SOLVER
from tests.security.test_hostile_jobs import compute_for
from tests.support import in_review, make_home, open_issue, tick_until

pytestmark = pytest.mark.security

USERS = {"root": None, "unprivileged": UNPRIVILEGED_UID}
PIDS = '"$TMPDIR"/left.pids'
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def _started(scratch: Path) -> int:
    path = Path(scratch_tmp(scratch)) / "left.pids"
    return len(path.read_text().split()) if path.exists() else 0


@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", ["landlock", "bwrap", "off"])
def test_setsid_and_double_forked_children_end_when_the_confined_child_exits(
        kind: str, user: str) -> None:
    uid = USERS[user]
    reason = skip_reason(kind, uid)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    mark = marker()
    with fixture(uid) as fx:
        confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx))
        argv, env = confinement.command(["bash", "-c", escapes(mark, PIDS)],
                                        {**ENV, "HOME": str(fx.run_home)},
                                        workdir=fx.ws, scratch=fx.run_home)
        chown(fx)
        try:
            outcome = run_process_group([*as_user(uid), *argv], fx.ws, env, None, 60)
            assert outcome.returncode == 0, outcome.stderr
            assert _started(fx.run_home) == 2
            assert survivors(mark) == []  # dead when the call returns, not later
        finally:
            kill_all(mark)


@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", ["landlock", "bwrap", "off"])
def test_leftovers_end_when_the_confined_child_times_out_ignoring_term(
        kind: str, user: str) -> None:
    uid = USERS[user]
    reason = skip_reason(kind, uid)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    mark = marker()
    with fixture(uid) as fx:
        confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx))
        stubborn = f"trap '' TERM; {escapes(mark, PIDS)}; while :; do sleep 0.1; done"
        argv, env = confinement.command(["bash", "-c", stubborn],
                                        {**ENV, "HOME": str(fx.run_home)},
                                        workdir=fx.ws, scratch=fx.run_home)
        chown(fx)
        try:
            outcome = run_process_group([*as_user(uid), *argv], fx.ws, env, None, 2.0)
            assert outcome.timed_out
            assert _started(fx.run_home) == 2
            assert survivors(mark) == []
        finally:
            kill_all(mark)


def _job(compute: Compute, confinement: Confinement, tree: Path, log_dir: Path,
         command: str) -> str:
    scratch = log_dir / "home"
    spec = JobSpec(name="leftovers", command=confinement.shell(command, scratch),
                   workdir=str(tree), log_dir=str(log_dir), time_minutes=5,
                   env={"HOME": str(scratch), "TMPDIR": scratch_tmp(scratch)})
    return compute.submit(spec)


def _wait(compute: Compute, job_id: str, timeout_s: float = 120) -> JobState:
    deadline = time.monotonic() + timeout_s
    while not (state := compute.observe([job_id])[job_id].state).terminal:
        assert time.monotonic() < deadline, f"the job never ended ({state})"
        time.sleep(0.2)
    return state


@pytest.mark.parametrize(("kind", "compute"), [
    (kind, compute) for kind in ("landlock", "bwrap", "off") for compute in ("local", "slurm")
    if (kind, compute) != ("off", "slurm")])  # off: the same reaper on both; local covers it
def test_leftovers_end_with_the_job_when_it_ends_or_is_cancelled(
        kind: str, compute: str, tmp_path: Path) -> None:
    """A job that exits at once, and one whose child ignores TERM so that the cancel
    ends with SIGKILL to its group (the sandbox wrapper dies with it: the runner, a
    subreaper, or Slurm's step cleanup must end the adopted sleepers)."""
    reason = skip_reason(kind, None)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    runner = compute_for(compute, tmp_path)
    marks = (marker(), marker())
    with fixture(None) as fx:
        confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx))
        trees = [fx.home / "runs" / "r1" / "trees" / name for name in ("quick", "stubborn")]
        for tree in trees:
            tree.mkdir(parents=True)
        logs = [fx.home / "runs" / "r1" / "jobs" / tree.name for tree in trees]
        try:
            quick = _job(runner, confinement, trees[0], logs[0], escapes(marks[0], PIDS))
            assert _wait(runner, quick) == JobState.COMPLETED
            assert _started(logs[0] / "home") == 2
            assert survivors_after(marks[0]) == []
            stubborn = _job(runner, confinement, trees[1], logs[1],
                            f"trap '' TERM; {escapes(marks[1], PIDS)}; "
                            f"while :; do sleep 0.1; done")
            deadline = time.monotonic() + 60
            while _started(logs[1] / "home") < 2:
                assert time.monotonic() < deadline, "the stubborn job's sleepers never started"
                time.sleep(0.2)
            runner.cancel(stubborn)
            assert _wait(runner, stubborn) == JobState.CANCELLED
            assert survivors_after(marks[1], settle_s=3.0) == []
        finally:
            for mark in marks:
                kill_all(mark)


def _leftover_script(path: Path, marks: dict[str, str]) -> Path:
    """A scripted agent whose session step, launch and candidate eval each leave two
    sleepers behind (the eval's through the solver it imports)."""
    solver = SOLVER + (f"\nimport subprocess as _sp\n"
                       f"_sp.run(['bash', '-c', {escapes(marks['eval'], PIDS)!r}])\n")
    legs: list[list[dict[str, Any]]] = [
        [{"shell": escapes(marks["session"], PIDS)},
         {"write": {"path": "solver/tour.py", "content": solver}},
         {"syscall": "launch --name probe --minutes 5 -- " + shlex.quote(
             escapes(marks["launch"], PIDS) + "; python evaluate.py --bench tour --json")},
         {"syscall": "sleep"}],
        [{"expect": "probe"}, {"shell": "echo '# 2-opt' > report.md"},
         {"syscall": "submit --report report.md"}, {"syscall": "sleep"}],
    ]
    path.write_text(yaml.safe_dump({"legs": legs}, sort_keys=False))
    return path


def _code_under_test(settings: Settings) -> Settings:
    """Jobs get an allowlisted environment: pass ``PYTHONPATH`` through when the test
    run sets it, so ``python -m outerloop`` in a job imports the code under test."""
    if not os.environ.get("PYTHONPATH"):
        return settings
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "[compute]\n", "[compute]\npass_env = [\"PYTHONPATH\"]\n", 1))
    return load_settings(settings.home)


@pytest.mark.e2e
# Once per compute kind, each under another backend (was all four cells): what each
# backend and each compute does to a leftover is tested at the seam above, per cell.
@pytest.mark.parametrize(("compute", "kind"), [
    ("local", "landlock"), pytest.param("slurm", "bwrap", marks=pytest.mark.slurm)])
def test_no_process_of_a_session_launch_or_eval_outlives_its_job_through_real_ticks(
        kind: str, compute: str, tmp_path: Path) -> None:
    reason = skip_reason(kind, None)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    if compute == "slurm" and os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
        pytest.skip(NO_REAL_SLURM)
    marks = {part: marker() for part in ("session", "launch", "eval")}
    settings = _code_under_test(make_home(
        tmp_path, _leftover_script(tmp_path / "leave.yaml", marks), compute=compute,
        extra_toml=f"[sandbox]\nkind = \"{kind}\"\n"))
    try:
        open_issue(settings, "Shorter tours", "Please try local search on tour.")
        state = tick_until(settings, in_review, timeout_s=300,
                           pause_s=1.0 if compute == "slurm" else 0.2)
        (run,) = state.runs.values()
        assert [v.verdict for v in run.verdicts] == ["improved"]
        started = sum(len(p.read_text().split()) for p in settings.home.rglob("left.pids"))
        assert started >= 8  # session 2, launch 2 + 2 (its solver), candidate eval 2
        assert {part: survivors_after(mark) for part, mark in marks.items()} == {
            part: [] for part in marks}
    finally:
        for mark in marks.values():
            kill_all(mark)


LEG = """
import json, subprocess, sys, time
from outerloop.sandbox import reaper
argv, env, cwd, pids = json.loads(sys.argv[1])
with reaper.tree_ends():
    child = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if len(open(pids).read().split()) >= 2:
                break
        except OSError:
            pass
        time.sleep(0.05)
    child.kill()  # the wrapper itself, SIGKILLed as at a hard time limit
    child.wait()
"""


@pytest.mark.parametrize("kind", ["landlock", "bwrap", "off"])
def test_leftovers_end_when_the_wrapper_itself_is_sigkilled(kind: str) -> None:
    """SIGKILL reaches the wrapper, not what it guards: bwrap's PID namespace dies
    with it (its init has bwrap as parent-death signal source); a Landlock or off
    wrapper's orphans go to the leg's process, a subreaper inside ``tree_ends``, which
    kills them when the leg ends."""
    reason = skip_reason(kind, None)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    mark = marker()
    with fixture(None) as fx:
        confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx))
        argv, env = confinement.command(
            ["bash", "-c", f"{escapes(mark, PIDS)}; sleep 600"],
            {**ENV, "HOME": str(fx.run_home)}, workdir=fx.ws, scratch=fx.run_home)
        pids = str(Path(scratch_tmp(fx.run_home)) / "left.pids")
        try:
            done = subprocess.run([sys.executable, "-c", LEG,
                                   json.dumps([argv, env, str(fx.ws), pids])],
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            assert _started(fx.run_home) == 2
            assert survivors_after(mark) == []
        finally:
            kill_all(mark)


KEEP = """
import subprocess, sys
from outerloop.sandbox import reaper
keep, leave = sys.argv[1], sys.argv[2]
mine = subprocess.Popen(["sleep", keep])  # the kernel's own child, started before the leg
with reaper.tree_ends():
    subprocess.run(["bash", "-c", leave], check=True)  # an unwrapped session step
print("kept" if mine.poll() is None else f"killed: {mine.returncode}")
mine.kill()
mine.wait()
"""


def test_leg_block_ends_the_sessions_orphans_but_spares_the_kernels_own_children(
        tmp_path: Path) -> None:
    mark, keep = marker(), marker()
    try:
        done = subprocess.run([sys.executable, "-c", KEEP, keep, escapes(mark, PIDS)],
                              env={**os.environ, "TMPDIR": str(tmp_path)},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "kept"
        assert len((tmp_path / "left.pids").read_text().split()) == 2
        assert survivors_after(mark) == []
    finally:
        kill_all(mark)
        kill_all(keep)
