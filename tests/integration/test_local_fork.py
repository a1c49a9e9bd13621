"""``[compute] local_start = "fork"``: a local job's runner and its kernel command are
forked from a warm interpreter (``compute/local_fork.py``), and behave as the fresh
processes ``exec`` starts. The compute contract suite runs every backend behaviour
over ``fork`` too; here is what only forking can get wrong: what a child inherits,
which commands are forked, and the zygote a threaded submitter forks from."""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from outerloop.compute.base import JobObservation, JobSpec, JobState
from outerloop.compute.local import LocalCompute
from outerloop.compute.local_fork import kernel_words
from outerloop.compute.local_records import read_record
from outerloop.config import ComputeSettings
from outerloop.home import init_home

KERNEL = [sys.executable, "-m", "outerloop"]


def _compute(tmp_path: Path, start: str) -> LocalCompute:
    return LocalCompute(tmp_path / "jobs", seconds_per_minute=4.0,
                        settings=ComputeSettings(local_start=start))  # type: ignore[arg-type]


def _spec(tmp_path: Path, name: str, command: str, **fields: object) -> JobSpec:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    fields.setdefault("time_minutes", 30)
    return JobSpec(name=name, command=command, workdir=str(work),
                   log_dir=str(tmp_path / "logs" / name), **fields)  # type: ignore[arg-type]


def _final(compute: LocalCompute, job_id: str, timeout_s: float = 60) -> JobObservation:
    deadline = time.monotonic() + timeout_s
    while True:
        obs = compute.observe([job_id])[job_id]
        if obs.state.terminal:
            return obs
        assert time.monotonic() < deadline, f"job {job_id} never ended: {obs}"
        time.sleep(0.1)


def _running_task(compute: LocalCompute, job_id: str, timeout_s: float = 60) -> int:
    """The pid of the job's (single) task once it runs."""
    deadline = time.monotonic() + timeout_s
    while True:
        record = read_record(compute.job_dir(job_id))
        task = record.tasks[0] if record is not None and 0 in record.tasks else None
        if task is not None and task.pgid is not None and task.state == JobState.RUNNING:
            return task.pgid
        assert time.monotonic() < deadline, f"job {job_id} never ran: {record}"
        time.sleep(0.1)


def _argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")


# -- which commands are forked ----------------------------------------------------------

def test_only_this_interpreters_kernel_command_is_forked() -> None:
    assert kernel_words(shlex.join([*KERNEL, "attempt", "measure", "r-1", "eval-1"])) == [
        "attempt", "measure", "r-1", "eval-1"]
    assert kernel_words(shlex.join(["/usr/bin/python3", "-m", "outerloop", "tick"])) is None
    assert kernel_words(shlex.join([*KERNEL[:2], "outerloop_evil", "tick"])) is None
    assert kernel_words("echo hi") is None
    assert kernel_words("'unbalanced") is None


@pytest.mark.parametrize("start", ["exec", "fork"])
def test_a_kernel_command_ends_as_it_would_fresh_with_its_output_and_exit_code(
        tmp_path: Path, start: str) -> None:
    compute = _compute(tmp_path, start)
    ok = compute.submit(_spec(tmp_path, "ok", shlex.join([*KERNEL, "--version"])))
    bad = compute.submit(_spec(tmp_path, "bad", shlex.join([*KERNEL, "no-such-command"])))
    assert _final(compute, ok).state == JobState.COMPLETED
    assert "outerloop" in (tmp_path / "logs" / "ok" / "stdout").read_text()
    failed = _final(compute, bad)
    assert (failed.state, failed.exit_code) == (JobState.FAILED, 2)
    stderr = (tmp_path / "logs" / "bad" / "stderr").read_text()
    assert "No such command 'no-such-command'" in stderr
    assert "-m outerloop" in stderr  # the usage line names the program as a fresh one


@pytest.mark.parametrize("start", ["exec", "fork"])
def test_a_long_kernel_command_is_forked_and_its_group_killed_at_cancel(
        tmp_path: Path, start: str) -> None:
    """``outerloop start --mode local`` ticks until stopped: forked, its argv is its
    runner's (no interpreter started), and cancel ends its whole group."""
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=[])
    compute = _compute(tmp_path, start)
    job = compute.submit(_spec(tmp_path, "loop", shlex.join(
        [*KERNEL, "start", "--mode", "local", "--home", str(home)])))
    pid = _running_task(compute, job)
    argv = " ".join(_argv(pid))
    assert ("-m outerloop start --mode local" in argv) == (start == "exec"), argv
    compute.cancel(job)
    assert _final(compute, job).state == JobState.CANCELLED
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_a_forked_kernel_command_is_killed_at_its_time_limit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=[])
    compute = _compute(tmp_path, "fork")
    job = compute.submit(_spec(tmp_path, "loop", shlex.join(
        [*KERNEL, "start", "--mode", "local", "--home", str(home)]), time_minutes=1))
    assert _final(compute, job).state == JobState.TIMEOUT


def test_a_kernel_command_with_other_python_variables_starts_fresh(tmp_path: Path) -> None:
    """A job whose ``PYTHONPATH`` differs from its runner's interpreter's would not run
    the same code forked: it starts a fresh interpreter, whose ``sitecustomize`` runs."""
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "started-fresh"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    compute = _compute(tmp_path, "fork")
    same = compute.submit(_spec(tmp_path, "same", shlex.join([*KERNEL, "--version"])))
    assert _final(compute, same).state == JobState.COMPLETED
    assert not marker.exists()
    other = compute.submit(_spec(tmp_path, "other", shlex.join([*KERNEL, "--version"]),
                                 env={"PYTHONPATH": os.pathsep.join(
                                     [str(site), *sys.path[1:2]])}))
    assert _final(compute, other).state == JobState.COMPLETED
    assert marker.exists()


def test_a_command_with_setup_lines_runs_through_bash_when_forking(tmp_path: Path) -> None:
    compute = LocalCompute(tmp_path / "jobs", settings=ComputeSettings(
        local_start="fork", setup=["export FROM_SETUP=yes"]))
    job = compute.submit(_spec(tmp_path, "setup", shlex.join(
        [*KERNEL, "--version"]) + " && echo $FROM_SETUP"))
    assert _final(compute, job).state == JobState.COMPLETED
    assert (tmp_path / "logs" / "setup" / "stdout").read_text().endswith("yes\n")


# -- what a forked child inherits ------------------------------------------------------

FORK_PROBE = textwrap.dedent('''
    import fcntl, json, os, signal, sys
    from outerloop.compute import local_fork

    out, lock_path, cwd = sys.argv[1:4]
    lock = open(lock_path, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    signal.signal(signal.SIGTERM, lambda *a: None)
    os.environ["CALLER_SECRET"] = "hunter2"
    log = os.open(out + ".log", os.O_WRONLY | os.O_CREAT, 0o644)

    def body():
        fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
        with open(lock_path, "w") as again:
            try:
                fcntl.flock(again, fcntl.LOCK_EX | fcntl.LOCK_NB)
                lock_free = True
            except BlockingIOError:
                lock_free = False
        with open(out, "w") as f:
            json.dump({"fds": fds, "env": dict(os.environ), "cwd": os.getcwd(),
                       "term_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
                       "own_session": os.getsid(0) == os.getpid(),
                       "forked": local_fork.forked(), "lock_free_after_parent": lock_free}, f)
        return 0

    import time
    pid = local_fork._fork(lambda: (time.sleep(0.5), body())[1], cwd=cwd,
                           env={"PATH": "/usr/bin:/bin", "JOB": "1"}, out_fd=log, err_fd=log)
    lock.close()  # the parent lets go: only an inherited copy could still hold it
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
''')


def test_a_forked_child_keeps_no_descriptor_handler_or_variable_of_its_parent(
        tmp_path: Path) -> None:
    """A submitter holds its ledger lock and its secrets while it submits: the forked
    runner must start as a fresh process would, with only its own environment."""
    out = tmp_path / "probe.json"
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run([sys.executable, "-c", FORK_PROBE, str(out), str(tmp_path / "lock"),
                    str(work)], check=True, timeout=60)
    seen = json.loads(out.read_text())
    assert seen["env"] == {"PATH": "/usr/bin:/bin", "JOB": "1"}
    assert seen["cwd"] == str(work)
    assert seen["term_default"] and seen["own_session"] and seen["forked"]
    assert seen["lock_free_after_parent"], "the child still held its parent's lock"
    assert [fd for fd in seen["fds"] if fd > 2] in ([], [3]), seen["fds"]  # 3: the listing


SQLITE_PROBE = textwrap.dedent('''
    import os, sys, time
    from pathlib import Path
    from outerloop.compute import local_fork
    from outerloop.ledger.book import rebuild

    home, out, spare = sys.argv[1:4]
    env = dict(os.environ)

    def job():
        # a job that folded its home's ledger (its history index open) submits a job
        # whose kernel command folds the same ledger; with ``spare`` it runs with a
        # spare zygote, as a task of a SUBMITTERS command does
        return local_fork.with_spare(work) if spare == "spare" else work()

    def work():
        state = rebuild(Path(home), save_cache=False)
        started = time.monotonic()
        pid = local_fork.start_runner(
            ["-m", "outerloop", "status", "--json", "--home", home], cwd=Path(home),
            env=env, log=Path(out + ".log"))
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                pass
            time.sleep(0.05)
        zygotes = [(type(z).__name__, getattr(z, "pid", None))
                   for z in local_fork._zygotes.values()]
        Path(out).write_text(f"{time.monotonic() - started:.2f} {len(state.runs)} "
                             f"{zygotes!r}")
        return 0

    log = os.open(out + ".err", os.O_WRONLY | os.O_CREAT, 0o644)
    pid = local_fork._fork(job, cwd=home, env=env, out_fd=log, err_fd=log)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
''')


def test_a_forked_job_that_opened_its_history_index_starts_a_job_that_reads_it_at_once(
        tmp_path: Path) -> None:
    """SQLite keeps, per process, the descriptors and locks of the databases it has
    open. A job forked from one that had its history index open would find them closed
    (a forked child keeps fds 0-2 only) and retry its lock until the busy timeout
    (10 s here, where `status` alone takes 0.5 s; a whole suite's forked jobs stalled
    so). Such a job is started from a zygote instead, and reads the index at once."""
    from outerloop.ledger.book import rebuild
    from tests.settled_history import settled_runs
    from tests.support import make_home

    home = make_home(tmp_path).home
    settled_runs(home, "demo/tinytsp", 3)
    rebuild(home)
    assert (home / "cache" / "history.sqlite3").exists()
    out = tmp_path / "took"
    subprocess.run([sys.executable, "-c", SQLITE_PROBE, str(home), str(out), "-"],
                   check=True, timeout=120)
    took = float(out.read_text().split()[0])
    assert took < 5, f"the job reading the index took {took} s: " + \
        (tmp_path / "took.log").read_text()[-2000:]
    assert int(out.read_text().split()[1]) == 3  # the job read the three settled runs


def test_a_forked_submitter_forks_its_jobs_from_its_spare_after_loading_sqlite(
        tmp_path: Path) -> None:
    """A task that kept a spare as it began (``local_fork.keep_spare``, as the tasks
    of ``SUBMITTERS`` do) and then folded its home (SQLite loaded) starts its job from
    the spare, a fork of itself, not from a zygote interpreter started for it (~0.5 s
    of CPU each); the job reads the index at once, and the spare ends, reaped by the
    task before it exits (an orphan would be a zombie where nothing reaps)."""
    from outerloop.ledger.book import rebuild
    from tests.settled_history import settled_runs
    from tests.support import make_home

    home = make_home(tmp_path).home
    settled_runs(home, "demo/tinytsp", 3)
    rebuild(home)
    out = tmp_path / "took"
    subprocess.run([sys.executable, "-c", SQLITE_PROBE, str(home), str(out), "spare"],
                   check=True, timeout=120)
    took, runs, zygotes = out.read_text().split(" ", 2)
    assert float(took) < 5 and int(runs) == 3, out.read_text() + \
        (tmp_path / "took.log").read_text()[-2000:]
    ((kind, spare),) = ast.literal_eval(zygotes)
    assert kind == "_Spare", zygotes
    assert not Path(f"/proc/{spare}").exists(), "the spare outlived its task (reaped by it)"


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_a_legs_forked_task_keeps_a_spare_as_it_begins_and_reaps_it_at_its_end(
        tmp_path: Path) -> None:
    """Through a real forked job: the task of ``outerloop attempt wake`` forks its spare
    before it does anything (here it then waits on its run's lease, held by this test:
    the spare is its one child), and reaps it as it ends."""
    import fcntl

    from outerloop.attempt.session import LEASE_FILE
    from outerloop.run.paths import RunPaths
    from tests.support import make_home

    home = make_home(tmp_path).home
    run = "tour-1-agent-01"
    lease = RunPaths.of(home, run).root / LEASE_FILE
    lease.parent.mkdir(parents=True)
    with lease.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        compute = _compute(tmp_path, "fork")
        job = compute.submit(_spec(tmp_path, "wake", shlex.join(
            [*KERNEL, "attempt", "wake", run, "--home", str(home)])))
        task = _running_task(compute, job)
        deadline = time.monotonic() + 30
        while not _children(task):
            assert time.monotonic() < deadline, "the task kept no spare"
            time.sleep(0.05)
        (spare,) = _children(task)
    _final(compute, job)  # the run is not in the ledger: the wake fails, and ends
    assert not Path(f"/proc/{spare}").exists(), "the spare outlived its task"


def test_the_kernel_legs_commands_are_the_submitters_that_keep_a_spare(
        tmp_path: Path) -> None:
    """``SUBMITTERS`` names the commands of the jobs that submit jobs: a run's legs
    (``attempt start|wake``, ``run/jobs.attempt_spec``)."""
    from outerloop.compute.local_fork import SUBMITTERS
    from outerloop.run.jobs import attempt_spec
    from tests.support import make_home

    settings = make_home(tmp_path)
    for verb in ("start", "wake"):
        spec = attempt_spec(settings, "r-1", verb, f"ol-r-1-{verb}", 5)
        words = kernel_words(spec.command)
        assert words is not None and tuple(words[:2]) in SUBMITTERS, spec.command


# -- the zygote --------------------------------------------------------------------------

def test_the_zygotes_warm_modules_load_no_sqlite() -> None:
    """What a zygote forks may fork its own jobs only while it has not loaded SQLite
    (``local_fork.SQLITE``): a warm module that loaded it would send every job a job
    submits to a zygote of its own."""
    probe = ("import importlib, sys; from outerloop.compute import local_fork as f; "
             "[importlib.import_module(m) for m in f.WARM_MODULES]; "
             "print(f.SQLITE in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "False", done.stdout + done.stderr


def test_a_submitter_forks_its_runners_from_one_zygote_started_again_when_it_died(
        tmp_path: Path) -> None:
    """This test's process (whose module state a test may patch) never forks a runner
    itself: its runners come from the zygote, which serves every submit and is started
    again when it died."""
    from outerloop.compute import local_fork

    compute = _compute(tmp_path, "fork")
    first = compute.submit(_spec(tmp_path, "a", "sleep 30"))
    (zygote,) = [z for z in local_fork._zygotes.values() if z.alive()]
    runner = int((compute.job_dir(first) / "runner.pid").read_text().split()[0])
    assert _argv(runner)[1:3] == ["-m", "outerloop.compute.local_fork"]
    zygote.proc.kill()
    zygote.proc.wait()
    second = compute.submit(_spec(tmp_path, "b", "true"))
    assert _final(compute, second).state == JobState.COMPLETED
    assert [z for z in local_fork._zygotes.values() if z.alive()] not in ([], [zygote])
    compute.cancel(first)
    assert _final(compute, first).state == JobState.CANCELLED


def test_a_submitter_whose_code_variables_changed_gets_a_zygote_started_with_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner is forked from an interpreter started with the submitter's own
    ``PYTHONPATH``: one the submitter set after its first zygote started gets another,
    which runs its ``sitecustomize`` as a fresh runner would."""
    compute = _compute(tmp_path, "fork")
    before = compute.submit(_spec(tmp_path, "before", "true"))
    assert _final(compute, before).state == JobState.COMPLETED
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "zygote-started"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p))
    after = compute.submit(_spec(tmp_path, "after", "true"))
    assert _final(compute, after).state == JobState.COMPLETED
    assert marker.exists()
