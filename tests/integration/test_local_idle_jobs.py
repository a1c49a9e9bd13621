"""A waiting local job holds a shell, not the kernel's Python (issue 27).

A job waiting for ``begin``, an ``after_any`` dependency or an older ``singleton`` is a
small bash gate (``compute/local_gate.sh``); the Python runner starts, in the same
process (``exec``), only once the job may start, is cancelled or is terminated. These
tests read the waiting job's processes from ``/proc`` and check every way out of the
wait keeps the runner's semantics.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.compute.base import JobState
from outerloop.compute.local import LocalCompute
from outerloop.compute.local_records import RUNNER_PID_FILE
from outerloop.config import ComputeSettings
from tests.integration.test_local_compute import make_spec, pid_dead, wait_for, wait_state

SETTLE_S = 1.5


@pytest.fixture
def compute(tmp_path: Path) -> Iterator[LocalCompute]:
    local = LocalCompute(tmp_path / "jobs", seconds_per_minute=1.0)
    yield local
    for row in local.queue():
        local.cancel(row.job_id)
    wait_for(lambda: not local.queue(), "leftover jobs to end")


def job_pid(compute: LocalCompute, job_id: str) -> int:
    path = compute.job_dir(job_id) / RUNNER_PID_FILE
    wait_for(path.exists, str(path))
    return int(path.read_text().split()[0])


def tree(pid: int) -> list[int]:
    """``pid`` and every live descendant of it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(
                int(entry.name))
    out, todo = [], [pid]
    while todo:
        here = todo.pop()
        if not pid_dead(here):
            out.append(here)
        todo.extend(parents.get(here, []))
    return out


def runs_python(pid: int) -> bool:
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    return (os.path.realpath(exe) == os.path.realpath(sys.executable)
            or Path(exe).name.startswith("python"))


def waiting(compute: LocalCompute, job_id: str, reason: str) -> int:
    """The waiting job's pid, once observers see it pending for ``reason``."""
    wait_for(lambda: compute.observe([job_id])[job_id].reason == reason, reason)
    time.sleep(SETTLE_S)
    obs = compute.observe([job_id])[job_id]
    assert (obs.state, obs.reason) == (JobState.PENDING, reason)
    return job_pid(compute, job_id)


def test_waiting_job_holds_no_python_when_its_dependency_is_running(
        compute: LocalCompute, tmp_path: Path) -> None:
    blocker = compute.submit(make_spec(tmp_path, "blocker", "sleep 300"))
    later = compute.submit(make_spec(tmp_path, "later", "touch ran", after_any=(blocker,)))
    pid = waiting(compute, later, "Dependency")
    members = tree(pid)
    assert members and not [p for p in members if runs_python(p)], members


def test_waiting_job_holds_no_python_when_its_begin_is_in_the_future(
        compute: LocalCompute, tmp_path: Path) -> None:
    later = compute.submit(make_spec(tmp_path, "later", "touch ran", begin="now+3600"))
    pid = waiting(compute, later, "BeginTime")
    assert not [p for p in tree(pid) if runs_python(p)]


def test_waiting_job_holds_no_python_when_an_older_singleton_runs(
        compute: LocalCompute, tmp_path: Path) -> None:
    compute.submit(make_spec(tmp_path, "solo", "sleep 300"))
    second = compute.submit(make_spec(tmp_path, "solo", "touch ran", singleton=True))
    pid = waiting(compute, second, "Dependency")
    assert not [p for p in tree(pid) if runs_python(p)]


def test_waiting_job_starts_in_the_same_process_when_its_begin_passes(
        compute: LocalCompute, tmp_path: Path) -> None:
    """The gate execs the runner: one pid from submit to the end, so observers that
    checked it (``runner.pid``) keep seeing the same live runner."""
    job_id = compute.submit(make_spec(tmp_path, "soon", "touch ran", begin="now+2"))
    pid = job_pid(compute, job_id)
    assert wait_state(compute, job_id).state == JobState.COMPLETED
    record = compute.current_record(job_id)
    assert record is not None and record.runner_pid == pid
    assert (tmp_path / "ran").exists()


def test_waiting_job_starts_when_its_dependency_runner_was_killed(
        compute: LocalCompute, tmp_path: Path) -> None:
    """A dependency whose runner died is over (observers call it node_fail): the gate
    must see that too, or the dependent would wait for ever."""
    dep = compute.submit(make_spec(tmp_path, "dep", "echo $$ > pid; sleep 300"))
    later = compute.submit(make_spec(tmp_path, "later", "touch ran", after_any=(dep,)))
    wait_state(compute, dep, lambda s: s == JobState.RUNNING)
    record = compute.current_record(dep)
    assert record is not None and record.runner_pid is not None
    os.kill(record.runner_pid, signal.SIGKILL)
    assert wait_state(compute, later).state == JobState.COMPLETED
    assert compute.observe([dep])[dep].state == JobState.NODE_FAIL
    compute.cancel(dep)


def test_waiting_job_ends_node_fail_without_running_when_its_gate_is_terminated(
        compute: LocalCompute, tmp_path: Path) -> None:
    """SIGTERM without a cancel request (the machine shutting down) is an
    infrastructure failure, as for a running runner; the command never starts."""
    blocker = compute.submit(make_spec(tmp_path, "blocker", "sleep 300"))
    later = compute.submit(make_spec(tmp_path, "later", "touch ran", after_any=(blocker,)))
    os.kill(waiting(compute, later, "Dependency"), signal.SIGTERM)
    obs = wait_state(compute, later)
    assert obs.state == JobState.NODE_FAIL
    assert obs.reason is not None and "terminated" in obs.reason
    assert not (tmp_path / "ran").exists()


def test_waiting_job_is_cancelled_without_running_when_cancel_is_requested(
        compute: LocalCompute, tmp_path: Path) -> None:
    blocker = compute.submit(make_spec(tmp_path, "blocker", "sleep 300"))
    later = compute.submit(make_spec(tmp_path, "later", "touch ran", after_any=(blocker,)))
    pid = waiting(compute, later, "Dependency")
    assert compute.cancel(later) is True
    obs = wait_state(compute, later)
    assert (obs.state, obs.reason) == (JobState.CANCELLED, "cancelled before it started")
    wait_for(lambda: pid_dead(pid), f"gate {pid} to end")
    assert not (tmp_path / "ran").exists()
    assert compute.observe([blocker])[blocker].state == JobState.RUNNING


def test_waiting_job_is_node_fail_when_its_gate_is_killed(
        compute: LocalCompute, tmp_path: Path) -> None:
    blocker = compute.submit(make_spec(tmp_path, "blocker", "sleep 300"))
    later = compute.submit(make_spec(tmp_path, "later", "touch ran", after_any=(blocker,)))
    os.kill(waiting(compute, later, "Dependency"), signal.SIGKILL)
    obs = wait_state(compute, later)
    assert obs.state == JobState.NODE_FAIL and obs.reason and "gone" in obs.reason
    compute.cancel(blocker)
    wait_state(compute, blocker)
    assert not (tmp_path / "ran").exists()


def test_waiting_job_holds_no_python_when_it_waits_for_stand_in_gpus(
        tmp_path: Path) -> None:
    local = LocalCompute(tmp_path / "jobs", seconds_per_minute=1.0,
                         settings=ComputeSettings(local_gpus=1))
    try:
        holder = local.submit(make_spec(tmp_path, "holder", "sleep 300", gpus=1))
        wait_state(local, holder, lambda s: s == JobState.RUNNING)
        later = local.submit(make_spec(tmp_path, "later", 'echo "$CUDA_VISIBLE_DEVICES" > dev',
                                       gpus=1))
        pid = waiting(local, later, "Resources")
        assert not [p for p in tree(pid) if runs_python(p)]
        local.cancel(holder)
        assert wait_state(local, later).state == JobState.COMPLETED
        assert (tmp_path / "dev").read_text().strip() == "0"
    finally:
        for row in local.queue():
            local.cancel(row.job_id)
        wait_for(lambda: not local.queue(), "leftover jobs to end")


def test_waiting_job_reads_dependency_when_its_begin_has_passed(
        compute: LocalCompute, tmp_path: Path) -> None:
    """The pending reason follows the gate's wait: ``BeginTime``, then ``Dependency``."""
    blocker = compute.submit(make_spec(tmp_path, "blocker", "sleep 300"))
    later = compute.submit(make_spec(tmp_path, "later", "touch ran", begin="now+1",
                                     after_any=(blocker,)))
    assert compute.observe([later])[later].reason == "BeginTime"
    pid = waiting(compute, later, "Dependency")
    assert not [p for p in tree(pid) if runs_python(p)]


def test_waiting_job_ignores_the_callers_shell_settings_when_they_are_set(
        compute: LocalCompute, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate runs with the submitter's environment (the runner needs it): a
    ``BASH_ENV`` script, ``SHELLOPTS`` or an exported function there must not change
    what the gate does."""
    startup = tmp_path / "startup.sh"
    startup.write_text(f"touch {tmp_path / 'sourced'}\n")
    monkeypatch.setenv("BASH_ENV", str(startup))
    monkeypatch.setenv("SHELLOPTS", "errexit:nounset")
    monkeypatch.setenv("BASH_FUNC_ready%%", "() { return 1; }")
    job_id = compute.submit(make_spec(tmp_path, "soon", "touch ran", begin="now+1"))
    assert wait_state(compute, job_id).state == JobState.COMPLETED
    assert (tmp_path / "ran").exists()
    assert not (tmp_path / "sourced").exists()
