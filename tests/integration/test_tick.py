"""The tick as a process: lock, pause, quiet ticks, and exactly-once effects across
crashes between a write-ahead intent and its done."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from outerloop.compute.base import JobSpec
from outerloop.config import Settings
from outerloop.kernel.actions import PostComment, SubmitJob, encode_effect
from outerloop.kernel.executor import CRASH_EXIT_CODE, CRASH_FILE
from outerloop.kernel.lock import TickLock
from outerloop.ledger.book import rebuild
from tests.support import TARGET, forge, make_home, open_issue, state_of, tick_process

EFFECT_SCRIPT = """
import sys
from pathlib import Path
from outerloop.kernel.actions import decode_effect
from outerloop.config import load_settings
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger.store import LedgerWriter, tick_file

settings = load_settings(sys.argv[1])
writer = LedgerWriter(tick_file(settings.home, sys.argv[2]))
Executor(Effects(settings), lambda _t: writer).run(decode_effect(sys.argv[3].encode()))
"""


def _run_effect(settings: Settings, action: SubmitJob | PostComment) -> int:
    done = subprocess.run([sys.executable, "-c", EFFECT_SCRIPT, str(settings.home), TARGET,
                           encode_effect(action).decode()], capture_output=True, text=True,
                          timeout=60, check=False)
    return done.returncode


def _crash_at(settings: Settings, point: str) -> None:
    (settings.home / CRASH_FILE).write_text(point + "\n")


def _job_action(settings: Settings) -> SubmitJob:
    spec = JobSpec(name="ol-probe-1", command="sleep 0.2", workdir=str(settings.home),
                   log_dir=str(settings.home / "probe"), time_minutes=1)
    return SubmitJob(target=TARGET, purpose="probe", spec=spec)


def _jobs_named(settings: Settings, name: str) -> list[str]:
    folder = settings.home / "jobs" / "names" / name
    return sorted(p.name for p in folder.iterdir() if p.name != "latest")


def test_submit_happens_once_when_tick_crashed_after_intent(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    action = _job_action(settings)
    _crash_at(settings, f"after-intent:{action.key}")
    assert _run_effect(settings, action) == CRASH_EXIT_CODE
    assert [p.key for p in state_of(settings).intents.values()] == [action.key]
    tick_process(settings, check=True)
    assert len(_jobs_named(settings, "ol-probe-1")) == 1
    assert state_of(settings).intents == {}


def test_submit_happens_once_when_tick_crashed_after_effect(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    action = _job_action(settings)
    _crash_at(settings, f"after-effect:{action.key}")
    assert _run_effect(settings, action) == CRASH_EXIT_CODE
    tick_process(settings, check=True)
    (job_id,) = _jobs_named(settings, "ol-probe-1")
    state = state_of(settings)
    assert state.intents == {} and job_id in state.jobs


def test_comment_is_posted_once_when_tick_crashed_after_effect(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    number = open_issue(settings, "x", "no benchmark named here")
    action = PostComment(target=TARGET, number=number, body="hello", marker_kind="status",
                         marker_key="probe")
    _crash_at(settings, f"after-effect:{action.key}")
    assert _run_effect(settings, action) == CRASH_EXIT_CODE
    tick_process(settings, check=True)
    bodies = [c.body for c in forge(settings).list_comments(TARGET, number)]
    assert sum("outerloop:status key=probe" in b for b in bodies) == 1


def test_comment_is_posted_once_when_tick_crashed_after_intent(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    number = open_issue(settings, "x", "no benchmark named here")
    action = PostComment(target=TARGET, number=number, body="hello", marker_kind="status",
                         marker_key="probe")
    _crash_at(settings, f"after-intent:{action.key}")
    assert _run_effect(settings, action) == CRASH_EXIT_CODE
    assert forge(settings).list_comments(TARGET, number) == []
    tick_process(settings, check=True)
    bodies = [c.body for c in forge(settings).list_comments(TARGET, number)]
    assert sum("outerloop:status key=probe" in b for b in bodies) == 1


def test_second_tick_exits_zero_naming_holder_when_lock_is_held(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    lock = TickLock(settings.home, 600)
    assert lock.acquire()
    try:
        done = tick_process(settings)
    finally:
        lock.release()
    assert done.returncode == 0
    assert "another tick is running" in done.stdout and "pid" in done.stdout


def test_one_of_two_concurrent_ticks_acts_when_started_together(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    argv = [sys.executable, "-m", "outerloop", "tick", "--home", str(settings.home)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert sum("another tick is running" in o for o in outs) == 1
    assert len(state_of(settings).runs) == 1


def test_paused_tick_takes_no_action_when_work_is_waiting(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    number = open_issue(settings, "Shorter tours", "Try local search on tour.")
    (settings.home / "PAUSE").touch()
    done = tick_process(settings, check=True)
    assert "paused" in done.stdout
    assert rebuild(settings.home, use_cache=False).events == 0
    assert forge(settings).list_comments(TARGET, number) == []
    assert not (settings.home / "jobs").exists() or not any((settings.home / "jobs").iterdir())
    heartbeat = json.loads((settings.home / "heartbeat.json").read_text())
    assert heartbeat["paused"] is True


def test_quiet_tick_appends_nothing_when_nothing_changed(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    tick_process(settings, check=True)
    ledger = settings.home / "ledger"
    before = sorted((p, p.stat().st_size) for p in ledger.rglob("*.jsonl"))
    head = subprocess.run(["git", "-C", str(ledger), "rev-list", "--all", "--count"],
                          capture_output=True, text=True, check=False).stdout
    done = tick_process(settings, check=True)
    after = sorted((p, p.stat().st_size) for p in ledger.rglob("*.jsonl"))
    assert "0 actions, 0 events" in done.stdout
    assert before == after
    assert subprocess.run(["git", "-C", str(ledger), "rev-list", "--all", "--count"],
                          capture_output=True, text=True, check=False).stdout == head
    assert not (settings.home / "jobs").exists() or not any((settings.home / "jobs").iterdir())
