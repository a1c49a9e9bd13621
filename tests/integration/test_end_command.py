"""`outerloop end RUN --reason`: the operator ends a run; the next tick cancels its jobs
and posts its report on the issue."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from outerloop.compute.factory import make_compute
from outerloop.config import Settings
from outerloop.kernel.lock import TickLock
from outerloop.ledger.book import run_file, tick_file
from outerloop.ledger.state import State
from tests.support import TARGET, forge, make_home, open_issue, state_of, tick_until

SLEEPY_AGENT = """\
legs:
  - - write: {path: solver/note.py, content: "WAITING = True\\n"}
    - syscall: 'launch --name long-wait --minutes 5 --why "a slow experiment" -- sleep 60'
    - syscall: sleep
"""


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", *args, "--home",
                           str(settings.home)], capture_output=True, text=True, check=False,
                          timeout=60)


def _parked_on_launch(state: State) -> bool:
    return any(r.state == "parked" and r.park_reason == "jobs" for r in state.runs.values())


def _parked_home(tmp_path: Path) -> tuple[Settings, int, str]:
    script = tmp_path / "sleepy.yaml"
    script.write_text(SLEEPY_AGENT)
    settings = make_home(tmp_path, script)
    number = open_issue(settings, "Shorter tours", "Try something slow on tour.")
    state = tick_until(settings, _parked_on_launch, timeout_s=120)
    (run_id,) = state.runs
    return settings, number, run_id


def test_run_ends_operator_and_jobs_are_cancelled_when_operator_ends_it(
        tmp_path: Path) -> None:
    settings, number, run_id = _parked_home(tmp_path)
    parked = state_of(settings).runs[run_id]
    waiting = [*parked.park_jobs, *([parked.wake_job] if parked.wake_job else [])]
    run_bytes = run_file(settings.home, TARGET, run_id).read_bytes()
    done = _cli(settings, "end", run_id, "--reason", "the cluster is being drained")
    assert done.returncode == 0, done.stderr
    assert run_file(settings.home, TARGET, run_id).read_bytes() == run_bytes
    assert '"kind":"run_ended"' in tick_file(settings.home, TARGET).read_text().replace(" ", "")
    state = tick_until(settings, lambda s: s.runs[run_id].report_posted and all(
        s.jobs[j].terminal for j in s.runs[run_id].job_ids if j in s.jobs), timeout_s=60)
    run = state.runs[run_id]
    assert (run.ending, run.ended) == ("operator", True)
    seen = make_compute(settings).observe(waiting)
    assert len(waiting) == 2 and {seen[j].state.value for j in waiting} == {"cancelled"}
    reports = [c.body for c in forge(settings).list_comments(TARGET, number)
               if "outerloop:report" in c.body]
    assert len(reports) == 1 and "the cluster is being drained" in reports[0]


def test_end_names_status_when_run_is_unknown(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    done = _cli(settings, "end", "tour-nope", "--reason", "typo")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "outerloop status" in done.stderr
    assert state_of(settings).runs == {}


def test_end_refuses_with_try_again_when_a_tick_holds_the_lock(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    lock = TickLock(settings.home, settings.cadence.tick_timeout_s)
    assert lock.acquire()
    try:
        done = _cli(settings, "end", "tour-any", "--reason", "busy")
    finally:
        lock.release()
    assert done.returncode == 1 and "try again" in done.stderr
