"""At a wake, the files the agent reads (``.outerloop/history.json``, ``queue.json``)
agree with the wake prompt: a launch the prompt says ended shows how it ended (state,
exit code, elapsed) and is no longer queued, and the session's own job is running
(issue 48 point 5). ``tests/slurm/test_wake_views_slurm.py`` runs the same on Slurm,
where the ledger has not yet seen the wake job start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.ledger.state import State
from tests.support import ended, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).with_name("wake_views_agent.yaml")


def views_agree_with_the_wake(settings: Settings, state: State) -> None:
    run = next(iter(state.runs.values()))
    home = settings.home / "runs" / run.run_id / "home"
    prompt = (settings.home / "runs" / run.run_id / "legs" / "002-prompt.md").read_text()
    history = json.loads((home / "history-at-wake.json").read_text())
    probe = [entry for entry in history if entry["name"] == "probe"]
    assert len(probe) == 1, history
    said = f"state `{probe[0]['state']}`, exit code {probe[0]['exit_code']}, " \
           f"elapsed {probe[0]['elapsed_s']}s"
    assert said in prompt, (said, prompt)
    assert (probe[0]["state"], probe[0]["exit_code"]) == ("failed", 3), probe
    assert probe[0]["last_line"] == "last words", probe
    queue = json.loads((home / "queue-at-wake.json").read_text())
    assert [entry for entry in queue if entry["job"] == probe[0]["job"]] == [], queue
    assert [entry["state"] for entry in queue] == ["running"], queue


def test_history_at_a_wake_says_how_the_launch_ended(tmp_path: Path) -> None:
    settings = make_home(tmp_path, SCRIPT)
    open_issue(settings, "Shorter tours", "Try something on tour.")
    views_agree_with_the_wake(settings, tick_until(settings, ended, timeout_s=180))
