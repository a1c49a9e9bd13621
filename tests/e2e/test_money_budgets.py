"""Money budgets through real ticks (local forge, local compute, scripted agents whose
legs report a cost): a leg that would pass the run's cap is not started and the issue is
told the arithmetic; a spent week keeps the next issue waiting, told once; ``status``
(and ``--json``) and the board show the spend against the caps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.config import load_settings
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import State
from tests.support import TARGET, ended, forge, make_home, open_issue, state_of, tick_until

pytestmark = pytest.mark.e2e

COSTLY_AGENT = """\
legs:
  - - cost: 0.6
    - write: {path: solver/note.txt, content: "first"}
    - syscall: 'launch --name look --minutes 5 --why "one experiment" -- sleep 1'
    - syscall: sleep
  - - cost: 0.1
    - syscall: stop
"""

SPENDING_AGENT = """\
legs:
  - - cost: 0.7
    - syscall: stop
"""


def _status(home: Path, *flags: str) -> str:
    result = CliRunner().invoke(cli_main, ["status", *flags, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result.output


def _kernel_posts(settings: object, number: int) -> list[str]:
    from outerloop.config import Settings

    assert isinstance(settings, Settings)
    return [c.body for c in forge(settings).list_comments(TARGET, number)
            if c.author == settings.forge.login]


def test_a_leg_that_could_pass_the_runs_cap_is_not_started_and_the_issue_is_told(
        tmp_path: Path) -> None:
    agent = tmp_path / "costly.yaml"
    agent.write_text(COSTLY_AGENT)
    settings = make_home(tmp_path, agent)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "grace_minutes = 0", "grace_minutes = 0\nusd_per_run = 1.0"))
    settings = load_settings(settings.home)
    issue = open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, lambda s: ended(s) and all(
        r.report_posted for r in s.runs.values()), timeout_s=180)
    (run,) = state.runs.values()
    assert run.ending == "budget-exhausted" and run.legs == 1  # the wake ran no leg
    assert run.cost_usd == pytest.approx(0.6)
    arithmetic = ("$0.60 spent + $0.60 estimated for the leg (the run's costliest leg so "
                  "far) = $1.20 > $1.00 (usd_per_run)")
    assert arithmetic in run.end_reason
    assert not (settings.home / "runs" / run.run_id / "legs" / "002-prompt.md").exists()
    (report,) = [b for b in _kernel_posts(settings, issue) if "outerloop:report" in b]
    assert arithmetic in report
    data = json.loads(_status(settings.home, "--json"))
    assert data["money"]["targets"][TARGET]["per_run"] == 1.0
    assert data["money"]["targets"][TARGET]["week_spent"] == pytest.approx(0.6)
    (row,) = data["runs"]
    assert (row["cost_usd"], row["usd_cap"]) == (0.6, 1.0)
    text = _status(settings.home)
    assert "$0.60 of $1.00" in text and f"model cost {TARGET}: $0.60 spent in 7 days" in text
    board = CliRunner().invoke(cli_main, ["board", "--home", str(settings.home)])
    assert board.exit_code == 0, board.output
    climb = (settings.home / "board" / "CLIMB.md").read_text()
    assert f"Model cost in 7 days, {TARGET}: $0.60" in climb and "$1.00 per run" in climb


def _waits(state: State) -> bool:
    return bool(state.waiting)


def test_a_spent_week_keeps_the_next_issue_waiting_and_tells_it_once(tmp_path: Path) -> None:
    agent = tmp_path / "spending.yaml"
    agent.write_text(SPENDING_AGENT)
    settings = make_home(tmp_path, agent)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "grace_minutes = 0",
        "grace_minutes = 0\nusd_per_week = 1.0\nusd_per_week_home = 5.0\n"
        "usd_leg_estimate = 0.5"))
    settings = load_settings(settings.home)
    open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, ended, timeout_s=120)
    (first,) = state.runs.values()
    assert first.cost_usd == pytest.approx(0.7)
    second = open_issue(settings, "Shorter tours again", "Try more on tour.")
    state = tick_until(settings, _waits, timeout_s=60)
    for _ in range(3):
        run_tick(settings)
    state = state_of(settings)
    assert len(state.runs) == 1  # not claimed: no leg could start
    arithmetic = ("$0.70 spent + $0.50 estimated for the leg ([limits] usd_leg_estimate) = "
                  "$1.20 > $1.00")
    ((_, reason, _),) = [(k, r, s) for k, (r, s) in state.waiting.items()]
    assert arithmetic in reason
    posts = [b for b in _kernel_posts(settings, second) if "cannot start yet" in b]
    assert len(posts) == 1 and arithmetic in posts[0]
    data = json.loads(_status(settings.home, "--json"))
    money = data["money"]
    assert money["targets"][TARGET]["week_cap"] == 1.0
    assert money["targets"][TARGET]["week_left"] == pytest.approx(0.3)
    assert money["home"] == {"week_spent": 0.7, "week_cap": 5.0, "week_left": 4.3}
    text = _status(settings.home)
    assert f"model cost {TARGET}: $0.70 spent in 7 days of $1.00, $0.30 left" in text
    assert "model cost the home (all targets): $0.70 spent in 7 days of $5.00" in text
