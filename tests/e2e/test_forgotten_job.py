"""A job the scheduler forgets (absent from its queue and its accounting) is concluded
``gone`` once, past its own bound (its time limit plus a queueing allowance), whatever
its purpose: here the launch a run is parked on. Before the bound nothing is concluded
(the wake waits: a job just submitted may not be listed yet); after it the run goes on,
its wake reading the launch as gone (never as finished), and reaches review."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop import clock
from outerloop.compute.local import LocalCompute
from outerloop.compute.local_records import process_alive
from outerloop.kernel.tick import run_tick
from tests.support import AGENTS, in_review, make_home, open_issue, tick_until

PAST_THE_BOUND_S = 3 * 3600
"""Later than the launch's 2 x 5 minutes (an array of 2, one at a time) + 2 h."""


def slow_launch_agent(tmp_path: Path) -> Path:
    """The 2-opt agent whose launch sleeps instead of measuring (it is forgotten)."""
    script = (AGENTS / "tinytsp-2opt.yaml").read_text()
    slow = script.replace("--why \"nearest neighbour + 2-opt local search on the tour "
                          "benchmark\" -- python evaluate.py --bench tour --json",
                          "--why \"nearest neighbour + 2-opt local search on the tour "
                          "benchmark\" -- sleep 300")
    assert slow != script
    path = tmp_path / "slow-launch.yaml"
    path.write_text(slow)
    return path


def forget(compute: LocalCompute, job_id: str) -> None:
    """What a scheduler that lost a job shows: no record of it anywhere, from one instant
    on (its directory moved away first: a job waiting on it, which may start within a
    tenth of a second of its end, never sees it ended), its processes killed after."""
    from outerloop.compute.local_records import read_record, read_runner_pid

    lost = compute.jobs_dir / f".lost-{job_id}"
    compute.job_dir(job_id).rename(lost)
    (compute.jobs_dir / "active" / job_id).unlink(missing_ok=True)
    record = read_record(lost)
    assert record is not None
    groups = [t.pgid for t in record.tasks.values() if t.pgid is not None]
    runner = read_runner_pid(lost)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    if runner is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(runner[0], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while runner is not None and process_alive(*runner):
        assert time.monotonic() < deadline, "the launch's runner did not stop"
        time.sleep(0.1)
    shutil.rmtree(lost)


def job_ended_states(home: Path, job_id: str) -> list[str]:
    """The ``state`` of every ``job_ended`` the ledger holds for ``job_id``."""
    found = []
    for path in sorted((home / "ledger").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event.get("kind") == "job_ended" and event.get("job_id") == job_id:
                found.append(str(event["state"]))
    return found


@pytest.fixture
def clock_set_right_after() -> Iterator[None]:
    yield
    clock.shift(0)


def test_forgotten_launch_is_concluded_gone_once_when_past_its_bound(
        tmp_path: Path, clock_set_right_after: None) -> None:
    settings = make_home(tmp_path, slow_launch_agent(tmp_path))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, lambda s: any(j.purpose == "launch" for j in s.jobs.values()))
    (launch,) = [j for j in state.jobs.values() if j.purpose == "launch"]
    forget(LocalCompute(settings.home / "jobs"), launch.job_id)

    wakes = lambda s: [j for j in s.jobs.values() if j.purpose == "wake"]  # noqa: E731
    state = tick_until(settings, lambda s: bool(wakes(s)) and all(j.terminal
                                                                  for j in wakes(s)))
    assert state.jobs[launch.job_id].state == "pending"  # within its bound: not concluded
    assert not in_review(state)  # the wake found the launch not ended: it waits

    clock.shift(PAST_THE_BOUND_S)  # the ticks' clock, hours later (the jobs' is right)
    state = tick_until(settings, in_review, timeout_s=90)
    assert job_ended_states(settings.home, launch.job_id) == ["gone"]
    assert state.jobs[launch.job_id].state == "gone"
    run_tick(settings)
    assert job_ended_states(settings.home, launch.job_id) == ["gone"]
