"""Whole research runs with the real Claude Code and Codex CLIs driving a scripted model.

Real ticks, real git, real local jobs; only the model is scripted. In leg 1 the agent
copies the 2-opt solver into the allowed `solver/tour.py`, launches it with the agent
tool, saves `env` and sleeps; leg 2 is the same session resumed with the launch's
results, where it writes a report, submits and sleeps; the gate credits the candidate
and a PR opens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.ledger.state import RunRecord
from tests.harness.conftest import (
    FORGE_SECRET,
    MODEL_KEY,
    STRAY_SECRET,
    cli_home,
    two_opt_solution,
)
from tests.harness.models import AnthropicModel, OpenAIModel, ScriptedModel, Shell, Text, Turn
from tests.support import TARGET, ended, forge, in_review, open_issue, tick_until

pytestmark = pytest.mark.harness

REPORT = ("# 2-opt after nearest neighbour\\n\\nNearest-neighbour tours cross themselves; "
          "2-opt removes the crossings. The launch try-2opt printed a shorter "
          "mean_tour_length than the base.\\n")


def research_turns(solution: Path) -> list[Turn]:
    return [
        Shell(f"cp {solution} solver/tour.py && python evaluate.py --bench tour --json"),
        Shell('python .outerloop/syscall launch --name try-2opt --minutes 5 '
              '--why "nearest neighbour + 2-opt" -- python evaluate.py --bench tour --json'),
        Shell("env > .outerloop/env-leg1.txt"),
        Shell("python .outerloop/syscall sleep"),
        Text("Launched try-2opt; handing over with sleep."),
        Shell(f"printf '{REPORT}' > report.md"),
        Shell("python .outerloop/syscall submit --report report.md"),
        Shell("python .outerloop/syscall sleep"),
        Text("Submitted the 2-opt solver."),
    ]


def _model(kind: str, turns: list[Turn]) -> tuple[ScriptedModel, str]:
    if kind == "claude":
        model: ScriptedModel = AnthropicModel(turns)
        return model, model.url
    model = OpenAIModel(turns)
    return model, f"{model.url}/v1"


def _run_dir(settings: Settings, run: RunRecord) -> Path:
    return settings.home / "runs" / run.run_id


def _strings(value: object) -> str:
    """Every string inside a JSON body, joined (what the model was shown)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(_strings(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_strings(v) for v in value)
    return ""


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_issue_becomes_pr_when_real_cli_edits_launches_and_submits(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest,
        leaky_parent_env: None) -> None:
    binary = request.getfixturevalue(f"{kind}_bin")
    model, url = _model(kind, research_turns(two_opt_solution(tmp_path)))
    with model:
        settings = cli_home(tmp_path, kind, binary, url)
        issue = open_issue(settings, "Shorter tours", "Please try local search on tour.")
        state = tick_until(settings, lambda s: in_review(s) or ended(s), timeout_s=240)
    (run,) = state.runs.values()
    assert run.issue == issue and run.pr_number is not None
    pr = forge(settings).get_pr(TARGET, run.pr_number)
    assert "## Measured" in pr.body
    assert [x.name for x in run.launches] == ["try-2opt"]
    assert model.played == len(model.turns)

    legs = _run_dir(settings, run) / "legs"
    sessions = [json.loads((legs / f"{n:03d}-session.json").read_text()) for n in (1, 2)]
    assert sessions[0]["session_id"] and sessions[0]["session_id"] == sessions[1]["session_id"]
    assert [s["stop_reason"] for s in sessions] == ["end_turn", "end_turn"]
    assert sessions[0]["tokens"] > 0 and sessions[0]["turns"] >= 4
    wake = (legs / "002-prompt.md").read_text()
    assert "try-2opt" in wake
    marker = next(line for line in wake.splitlines() if "try-2opt" in line)
    resumed = [text for text in map(_strings, (r.body for r in model.requests))
               if marker in text and "cp " in text and "syscall submit" not in text]
    assert resumed, "the resumed leg must send the wake together with leg 1's history"
    assert (legs / "001-transcript.jsonl").is_file()


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_session_env_holds_only_own_key_when_parent_has_forge_token_and_strays(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest,
        leaky_parent_env: None) -> None:
    binary = request.getfixturevalue(f"{kind}_bin")
    turns: list[Turn] = [Shell("env > .outerloop/env-leg1.txt"),
                         Shell("python .outerloop/syscall stop"), Text("stopped")]
    model, url = _model(kind, turns)
    with model:
        settings = cli_home(tmp_path, kind, binary, url)
        open_issue(settings, "Shorter tours", "Please try local search on tour.")
        state = tick_until(settings, lambda s: any(r.ended for r in s.runs.values()),
                           timeout_s=180)
    (run,) = state.runs.values()
    root = _run_dir(settings, run)
    env_text = (root / "ws" / ".outerloop" / "env-leg1.txt").read_text()
    key_var = "ANTHROPIC_API_KEY" if kind == "claude" else "OPENAI_API_KEY"
    assert f"{key_var}={MODEL_KEY}" in env_text
    assert FORGE_SECRET not in env_text and STRAY_SECRET not in env_text
    assert "GITHUB_TOKEN" not in env_text and "GH_TOKEN" not in env_text
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            assert FORGE_SECRET.encode() not in data, path
            assert STRAY_SECRET.encode() not in data, path
    for path in (root / "legs").iterdir():
        assert MODEL_KEY not in path.read_text(), f"{path} is not redacted"
    sent = model.texts_sent()
    assert FORGE_SECRET not in sent and STRAY_SECRET not in sent
