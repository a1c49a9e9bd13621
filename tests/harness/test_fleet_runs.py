"""A fleet of models through real ticks: targets with their own harness kind, model and
endpoint, and named endpoints with their own outage latches.

One home, two targets: ``demo/tinytsp`` runs the scripted agent, ``demo/tinytsp-fork``
runs the real Claude Code CLI against a scripted model server (its own endpoint
``west``, its own model name). The tick probes each endpoint with the model API's
list-models call while runs use it; an endpoint that is down holds its runs (no job, no
model request) while the other target's run goes on, and ``status`` says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.home import init_home
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import State
from tests.harness.conftest import MODEL_KEY
from tests.harness.models import AnthropicModel, Shell, Text
from tests.support import (
    AGENTS,
    EXAMPLE_TARGET,
    TARGET,
    forge,
    starting_jobs,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.harness

OTHER = "demo/tinytsp-fork"
MODEL = "claude-fleet-west"


def fleet_home(tmp_path: Path, claude_bin: str, west: str, east: str) -> Settings:
    """The scripted agent on ``demo/tinytsp`` (endpoint ``east``: a URL probe), Claude
    Code on ``demo/tinytsp-fork`` (endpoint ``west``: the list-models probe with its
    key). ``[harness]`` stays the scripted default that ``init`` wrote."""
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted",
              targets=[TARGET, OTHER], script=str(AGENTS / "tinytsp-2opt.yaml"))
    key = home / "keys" / "west"
    key.write_text(MODEL_KEY + "\n")
    os.chmod(key, 0o600)
    config = home / "outerloop.toml"
    text = starting_jobs(config.read_text().replace("max_new_runs_per_tick = 1",
                                                    "max_new_runs_per_tick = 2\ngrace_minutes = 0"))
    text = text[:text.index("[[targets]]")]
    text += f"""
[endpoints.west]
base_url = "{west}"
key_file = "keys/west"
probe = "models"

[endpoints.east]
probe = "{east}/health"

[[targets]]
repo = "{TARGET}"
agents = [{{kind = "scripted", script = "{AGENTS / 'tinytsp-2opt.yaml'}", endpoint = "east"}}]

[[targets]]
repo = "{OTHER}"
[[targets.agents]]
kind = "claude"
model = "{MODEL}"
binary = "{claude_bin}"
endpoint = "west"
max_retries = 0
"""
    config.write_text(text)
    settings = load_settings(home)
    for repo in (TARGET, OTHER):
        forge(settings).import_repo(EXAMPLE_TARGET, repo)
        forge(settings).open_issue_as(repo, "Shorter tours", "Try 2-opt on tour.",
                                      "maintainer")
    return settings


def _run_of(state: State, repo: str) -> object:
    (run,) = [r for r in state.runs.values() if r.target == repo]
    return run


def _leg_done(state: State, repo: str) -> bool:
    runs = [r for r in state.runs.values() if r.target == repo]
    return bool(runs) and runs[0].legs >= 1 and not runs[0].leg_open


def _status(settings: Settings) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "outerloop", "status", "--json", "--home",
                           str(settings.home)], capture_output=True, text=True, check=True)
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def _turns() -> list[Shell | Text]:
    return [Shell("python .outerloop/syscall stop"), Text("Nothing to try; stopped.")]


def test_two_targets_run_legs_with_their_own_harness_kind_model_and_endpoint(
        tmp_path: Path, claude_bin: str) -> None:
    with AnthropicModel(_turns()) as west, AnthropicModel([]) as east:
        settings = fleet_home(tmp_path, claude_bin, west.url, east.url)
        state = tick_until(settings, lambda s: _leg_done(s, TARGET) and _leg_done(s, OTHER),
                           timeout_s=240)
    scripted, claude = _run_of(state, TARGET), _run_of(state, OTHER)
    assert scripted.leg_endpoint == "east" and claude.leg_endpoint == "west"  # type: ignore[attr-defined]
    sent = [r for r in west.requests if r.path.startswith("/v1/messages")]
    assert sent and {r.body.get("model") for r in sent} == {MODEL}
    assert any(r.path == "/v1/models" and {k.lower(): v for k, v in r.headers.items()}
               .get("x-api-key") == MODEL_KEY for r in west.requests), \
        "the tick probes west with its own key"
    assert [r.path for r in east.requests if r.path != "/health"] == [], \
        "the scripted target's leg never calls a model"
    legs = settings.home / "runs" / claude.run_id / "legs"  # type: ignore[attr-defined]
    assert json.loads((legs / "001-session.json").read_text())["session_id"]
    seats = {r["target"]: r["seat"] for r in _status(settings)["runs"]  # type: ignore[union-attr]
             if r["seat"]}
    assert seats.get(OTHER, f"claude:{MODEL}@west") == f"claude:{MODEL}@west"


def test_runs_on_a_down_endpoint_wait_while_the_other_endpoints_runs_go_on(
        tmp_path: Path, claude_bin: str) -> None:
    with AnthropicModel(_turns()) as west, AnthropicModel([]) as east:
        west.down = True
        settings = fleet_home(tmp_path, claude_bin, west.url, east.url)
        state = tick_until(settings, lambda s: _leg_done(s, TARGET), timeout_s=240)
        for _ in range(3):
            run_tick(settings)
        state = state_of(settings)
        waiting = _run_of(state, OTHER)
        assert not waiting.admitted and waiting.legs == 0  # type: ignore[attr-defined]
        assert not [j for j in state.jobs.values() if j.run == waiting.run_id]  # type: ignore[attr-defined]
        assert not [r for r in west.requests if r.path.startswith("/v1/messages")], \
            "no session was started on the down endpoint"
        latch = state.endpoints["west"]
        assert latch.down and latch.source == "probe" and latch.refusal == "overload"
        status = _status(settings)
        endpoints = status["endpoints"]
        assert isinstance(endpoints, dict)
        assert endpoints["west"]["state"] == "down"
        assert endpoints["west"]["waiting"] == [waiting.run_id]  # type: ignore[attr-defined]
        assert endpoints["east"]["state"] == "up"
        (row,) = [r for r in status["runs"] if r["target"] == OTHER]  # type: ignore[union-attr]
        assert "endpoint west is down" in row["waiting"]
        shown = subprocess.run([sys.executable, "-m", "outerloop", "status", "--home",
                                str(settings.home)], capture_output=True, text=True,
                               check=True).stdout
        assert "endpoint west: down" in shown and waiting.run_id in shown  # type: ignore[attr-defined]

        west.down = False  # back: the next probe lifts the latch, the run starts
        state = tick_until(settings, lambda s: _leg_done(s, OTHER), timeout_s=240)
    assert not state.endpoints["west"].down
    assert [r.body.get("model") for r in west.requests
            if r.path.startswith("/v1/messages")][:1] == [MODEL]
