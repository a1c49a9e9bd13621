"""The agent's ``queue`` and ``history`` are answered live by the leg's watcher: the
real tool asks through the channel, the kernel answers from the ledger and the
scheduler as they are now."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from outerloop.agent_tool.layout import ANSWERS_DIR, ASK_DIR
from outerloop.attempt.channel import install_channel
from outerloop.attempt.live import watcher_for
from outerloop.compute.base import JobSpec
from outerloop.config import Settings, load_settings
from outerloop.kernel.actions import SubmitJob
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger import events as ev
from outerloop.ledger import store
from tests.support import TARGET, make_home

OURS = "tour-20261130T020000-agent-01"
SIBLING = "tour-20261130T020100-agent-02"
SETTLED = "tour-20261129T000000-agent-03"


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, check=True)
    install_channel(ws, {})
    return ws


def _queued(settings: Settings, run_id: str, agent: str) -> store.LedgerWriter:
    writer = store.LedgerWriter(store.run_file(settings.home, TARGET, run_id))
    writer.append(ev.RunQueued(run=run_id, target=TARGET, benchmark="tour", agent=agent,
                               issue_title="shorter tours"))
    return writer


def _tool(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, ".outerloop/syscall", *args], cwd=ws,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    settings = make_home(tmp_path)
    config = settings.home / "outerloop.toml"  # the sibling's launch asks for one GPU
    config.write_text(config.read_text().replace('[compute]\nkind = "local"\n',
                                                 '[compute]\nkind = "local"\nlocal_gpus = 1\n'))
    settings = load_settings(settings.home)
    _queued(settings, OURS, "agent-01").append(ev.LegStarted(run=OURS, leg=1, role="climb"))
    _queued(settings, SIBLING, "agent-02")
    settled = _queued(settings, SETTLED, "agent-03")
    settled.append(ev.Verdict(run=SETTLED, benchmark="tour", verdict="improved",
                              baseline="100", candidate="90", delta="-10"))
    settled.append(ev.RunEnded(run=SETTLED, ending="merged", by="test",
                               report="The agent wrote in its report:\n\n```text\n"
                                      "# 2-opt after nearest neighbour\n\nbetter\n```\n"))
    return settings


def test_queue_shows_a_sibling_job_submitted_after_the_leg_started_when_asked(
        settings: Settings, tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    sibling_writer = store.LedgerWriter(store.run_file(settings.home, TARGET, SIBLING))
    executor = Executor(Effects(settings), lambda _target: sibling_writer)
    with watcher_for(settings, ws, TARGET) as watcher:  # our leg has started
        before = _tool(ws, "queue", "--wait", "20")
        assert before.returncode == 0, before.stderr
        assert "live" in before.stdout and "no kernel jobs" in before.stdout
        spec = JobSpec(name=f"ol-{SIBLING}-sweep", command="sleep 30", workdir=str(tmp_path),
                       log_dir=str(tmp_path / "sibling-logs"), time_minutes=5, gpus=1,
                       env={"OUTERLOOP_RUN": SIBLING})
        outcome = executor.run(SubmitJob(target=TARGET, run=SIBLING, purpose="launch",
                                         launch="sweep", spec=spec))
        job_id = outcome.result.job_id
        assert job_id is not None, outcome
        try:
            after = _tool(ws, "queue", "--wait", "20")
        finally:
            Effects(settings).compute().cancel(job_id)
        assert watcher.answered == 2
    assert after.returncode == 0, after.stderr
    line = next(x for x in after.stdout.splitlines() if f"job {job_id}" in x)
    assert "agent-02" in line and SIBLING in line and "launch 'sweep'" in line
    assert "1 GPU(s)" in line and ("running" in line or "pending" in line)
    trying = after.stdout.split("what each is trying:", 1)[1]
    assert f"agent-02 run {SIBLING}" in trying and "shorter tours" in trying
    assert SETTLED not in trying  # ended: in history, not here


def test_history_lists_the_targets_ended_runs_live_when_asked(
        settings: Settings, tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with watcher_for(settings, ws, TARGET):
        result = _tool(ws, "history", "--wait", "20")
    assert result.returncode == 0, result.stderr
    assert "no launches yet in this run" in result.stdout
    line = next(x for x in result.stdout.splitlines() if SETTLED in x)
    assert "merged" in line and "improved (100 -> 90)" in line
    assert "tried: 2-opt after nearest neighbour" in line  # its report's title line
    assert SIBLING not in result.stdout  # not ended


def test_queue_falls_back_to_the_snapshot_when_no_watcher_answers(
        settings: Settings, tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    (ws / ".outerloop" / ASK_DIR).mkdir()
    started = time.monotonic()
    result = _tool(ws, "queue", "--wait", "1")
    assert result.returncode == 0
    assert "no live answer" in result.stdout and time.monotonic() - started < 10
    assert _tool(ws, "queue", "--wait", "999").returncode == 2


def test_watcher_ignores_a_request_without_a_valid_nonce_when_asked(
        settings: Settings, tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    watcher = watcher_for(settings, ws, TARGET)
    with watcher:
        pass
    ask = ws / ".outerloop" / ASK_DIR
    (ask / "queue.json").write_text(json.dumps({"nonce": "../../etc"}))
    assert watcher.poll("queue") is False
    (tmp_path / "elsewhere.json").write_text(json.dumps({"nonce": "abcdef0123456789"}))
    (ask / "history.json").symlink_to(tmp_path / "elsewhere.json")
    assert watcher.poll("history") is False
    assert not (ws / ".outerloop" / ANSWERS_DIR / "queue.json").exists()
    assert (tmp_path / "elsewhere.json").exists()


def test_answers_stay_within_the_run_when_siblings_are_out_of_sight(
        settings: Settings, tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with watcher_for(settings, ws, TARGET, only_run=OURS):
        history = _tool(ws, "history", "--wait", "20")
    assert history.returncode == 0, history.stderr
    assert SETTLED not in history.stdout and "none yet" in history.stdout
