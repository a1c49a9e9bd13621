"""bench/chaos.py's scripted agent (bench/chaos_agent.py): each status it can find
leads to the step its kind's script says (a real shell over a real status file and git
workspace; the syscall tool is a stand-in that records what was asked)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.chaos_agent import AGENT

RECORDER = """import json, sys
with open(sys.argv[0] + ".calls", "a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
"""


def play(tmp_path: Path, bench: str, launches: int, sleeps: int, pr: int | None = None,
         dirty: bool = False, last: str | None = "completed") -> list[str]:
    """Run the agent once in a fresh workspace; the verbs it called, in order."""
    ws = tmp_path / "ws"
    (ws / ".outerloop").mkdir(parents=True)
    (ws / "evaluate.py").write_text("print('score')\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "add", "evaluate.py"], cwd=ws, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
                   cwd=ws, check=True)
    if dirty:
        (ws / "evaluate.py").write_text("print('tuned')\n")
    (ws / ".outerloop" / "status.json").write_text(json.dumps({
        "run_id": "r1", "benchmark": bench, "launches_used": launches, "sleeps_used": sleeps,
        "pr": pr}))
    history = [] if launches == 0 or last is None else [{"state": last}]
    (ws / ".outerloop" / "history.json").write_text(json.dumps(history))
    (ws / ".outerloop" / "syscall").write_text(RECORDER)
    subprocess.run(["bash", "-c", AGENT], cwd=ws, check=True, timeout=30)
    calls = ws / ".outerloop" / "syscall.calls"
    return [json.loads(line)[0] for line in calls.read_text().splitlines()]


@pytest.mark.parametrize("bench", ["gain", "merge", "nogain"])
def test_agent_launches_first_when_no_launch_is_used(tmp_path: Path, bench: str) -> None:
    assert play(tmp_path, bench, launches=0, sleeps=0) == ["launch", "sleep"]


@pytest.mark.parametrize("bench", ["gain", "merge"])
def test_agent_submits_when_woken_with_its_result(tmp_path: Path, bench: str) -> None:
    verbs = play(tmp_path, bench, launches=1, sleeps=1)
    assert verbs[-2:] == ["submit", "sleep"] and "launch" not in verbs


def test_agent_answers_the_review_when_its_pr_is_open(tmp_path: Path) -> None:
    assert play(tmp_path, "merge", launches=1, sleeps=2, pr=7) == ["message", "sleep"]


def test_nogain_agent_submits_after_its_result_and_stops_after_the_verdict(
        tmp_path: Path) -> None:
    assert play(tmp_path / "a", "nogain", launches=1, sleeps=1) == ["submit", "sleep"]
    assert play(tmp_path / "b", "nogain", launches=1, sleeps=2) == ["stop"]


def test_outside_agent_is_refused_then_launches_the_evaluator_as_it_is_then_stops(
        tmp_path: Path) -> None:
    assert play(tmp_path / "a", "outside", launches=0, sleeps=0) == ["launch", "sleep"]
    assert play(tmp_path / "b", "outside", launches=0, sleeps=0, dirty=True) == [
        "launch", "sleep"]
    assert play(tmp_path / "c", "outside", launches=1, sleeps=1) == ["stop"]


@pytest.mark.parametrize("bench", ["gain", "merge", "nogain", "outside"])
@pytest.mark.parametrize("died", ["failed", "cancelled", "gone"])
def test_agent_launches_again_when_its_experiment_died(tmp_path: Path, bench: str,
                                                       died: str) -> None:
    """A killed launch job or a full disk must not rob a kind of its *results* stage."""
    verbs = play(tmp_path, bench, launches=1, sleeps=1, last=died)
    assert verbs == ["launch", "sleep"]


@pytest.mark.parametrize("bench", ["gain", "merge", "nogain", "outside"])
def test_agent_gives_up_relaunching_after_three_launches(tmp_path: Path, bench: str) -> None:
    verbs = play(tmp_path, bench, launches=3, sleeps=3, last="failed")
    assert "launch" not in verbs


@pytest.mark.parametrize("bench", ["gain", "merge", "nogain", "outside"])
@pytest.mark.parametrize("last", ["running", "failed"])
@pytest.mark.parametrize(("launches", "sleeps"), [(1, 0), (1, 1), (3, 3)])
def test_agent_never_sleeps_with_nothing_staged(tmp_path: Path, bench: str, last: str | None,
                                               launches: int, sleeps: int) -> None:
    """A bare `sleep` is answered by another leg at once (nothing to park on): an agent
    that sleeps on a live experiment loops until its script runs out."""
    verbs = play(tmp_path, bench, launches=launches, sleeps=sleeps, last=last)
    assert verbs[-1] != "sleep" or {"launch", "submit"} & set(verbs), verbs


def test_nogain_agent_submits_after_a_relaunch_once_its_result_is_in(tmp_path: Path) -> None:
    assert play(tmp_path / "a", "nogain", launches=2, sleeps=2) == ["submit", "sleep"]
    assert play(tmp_path / "b", "nogain", launches=2, sleeps=3) == ["stop"]
