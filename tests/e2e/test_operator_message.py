"""`outerloop message RUN TEXT`: the operator's words reach the run's next leg, fenced
and attributed to the operator, once, through real ticks on the local forge with local
compute and a scripted agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.config import Settings, load_settings
from outerloop.ledger.state import OPERATOR_MESSAGE, RunRecord, State
from tests.support import ended, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

WORDS = "MSG-7f3: try a smaller step first, then widen it"

AGENT = """\
legs:
  - - write: {path: solver/note.txt, content: "first"}
    - syscall: 'launch --name wait-a-bit --minutes 5 --why "hold the run parked" -- sleep 8'
    - syscall: sleep
  - - expect: "## Message from the operator"
    - expect: "MSG-7f3: try a smaller step first"
    - syscall: 'launch --name again --minutes 5 --why "one more wake" -- sleep 1'
    - syscall: sleep
  - - expect: "again"
    - syscall: stop
"""


def _send(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli_main, ["message", *args, "--home", str(home)])
    return result.exit_code, result.output


def _parked_on_jobs(state: State) -> bool:
    return any(r.state == "parked" and r.park_reason == "jobs" and r.legs == 1
               for r in state.runs.values())


def _operator_lines(home: Path) -> list[dict[str, object]]:
    (tick,) = (home / "ledger").glob("*/tick.jsonl")
    lines = [json.loads(line) for line in tick.read_text().splitlines()]
    return [x for x in lines if x.get("kind") == "feedback"
            and x.get("source_kind") == OPERATOR_MESSAGE]


def test_a_message_reaches_the_next_wake_once_fenced_as_the_operators(
        tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT)
    settings = make_home(tmp_path, agent)
    home = settings.home
    open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, _parked_on_jobs)
    run: RunRecord = next(iter(state.runs.values()))
    code, out = _send(home, run.run_id, WORDS)
    assert code == 0, out
    assert f"recorded a message for {run.run_id}" in out
    code, again = _send(home, run.run_id, WORDS)  # a retried command
    assert code == 0 and "already recorded" in again and "nothing sent twice" in again
    assert len(_operator_lines(home)) == 1
    shown = CliRunner().invoke(cli_main, ["status", "--json", "--home", str(home)])
    (row,) = json.loads(shown.output)["runs"]
    assert [(m["text"], m["delivered"]) for m in row["messages"]] == [(WORDS, False)]

    state = tick_until(settings, ended, timeout_s=180)
    run = state.runs[run.run_id]
    assert run.ending == "negative-result", run.end_reason
    legs = home / "runs" / run.run_id / "legs"
    wake = (legs / "002-prompt.md").read_text()
    section = wake.split("## Message from the operator", 1)[1]
    assert "The operator of this outerloop home" in section
    fenced = section.split("```", 2)[1]
    assert WORDS in fenced  # quoted inside the fence, as data
    assert WORDS not in (legs / "003-prompt.md").read_text()  # delivered once
    code, late = _send(home, run.run_id, WORDS)
    assert code != 0 and "already ended" in late
    status = CliRunner().invoke(cli_main, ["status", "--home", str(home)]).output
    assert "operator message" in status and "delivered" in status and "MSG-7f3" in status


def test_unknown_run_is_refused_and_nothing_recorded(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    code, out = _send(settings.home, "tour-20260101T000000-agent-01", "hello")
    assert code != 0 and "no run 'tour-20260101T000000-agent-01'" in out
    assert not list((settings.home / "ledger").glob("*/tick.jsonl")) or \
        not _operator_lines(settings.home)


def _set_setup(settings: Settings, line: str) -> Settings:
    """``[compute] setup = [line]`` in the home's outerloop.toml."""
    config = settings.home / "outerloop.toml"
    head, tail = config.read_text().split("[compute]\n", 1)
    tail = "\n".join(x for x in tail.split("\n") if not x.startswith("setup ="))
    config.write_text(f"{head}[compute]\nsetup = [\"{line}\"]\n{tail}")
    return load_settings(settings.home)


def test_a_message_sent_before_the_first_leg_is_in_the_brief(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text("legs:\n  - - expect: \"MSG-7f3\"\n    - syscall: stop\n")
    # A failing setup line holds the run before its first leg (it waits for the fix).
    settings = _set_setup(make_home(tmp_path, agent), "false")
    open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, lambda s: any(s.machine_wait(r) for r in s.runs.values()))
    (run_id,) = state.runs
    assert state.runs[run_id].legs == 0
    code, out = _send(settings.home, run_id, WORDS, "--key", "first-words")
    assert code == 0 and "first leg's brief" in out, out
    fixed = _set_setup(settings, "true")
    state = tick_until(fixed, ended, timeout_s=180)
    run = state.runs[run_id]
    brief = (settings.home / "runs" / run_id / "legs" / "001-prompt.md").read_text()
    assert "## Message from the operator" in brief and WORDS in brief
    assert run.ending == "negative-result", run.end_reason
    assert "operator-first-words" in run.delivered
