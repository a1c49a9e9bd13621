"""How legs of the real CLIs end badly: turns, denials, refusals, walltime."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from outerloop import clock
from outerloop.attempt import endpoint_gate
from outerloop.clock import parse_stamp
from outerloop.config import SandboxSettings
from outerloop.harness.agent_cli import CliSettings
from outerloop.harness.base import SessionLimits
from outerloop.harness.claude import ClaudeHarness
from outerloop.harness.codex import CodexHarness
from outerloop.kernel.lanes import endpoints
from outerloop.kernel.tick import run_tick
from outerloop.sandbox import Confinement, Sandbox
from outerloop.sandbox.resolve import available
from tests.harness.conftest import MODEL_KEY, cli_home, target_with_turn_cap
from tests.harness.models import (
    AnthropicModel,
    Fail,
    OpenAIModel,
    ScriptedModel,
    Shell,
    Text,
    Turn,
)
from tests.support import ended, open_issue, state_of, tick_until

pytestmark = pytest.mark.harness


def _key(tmp_path: Path) -> Path:
    key = tmp_path / "model-key"
    key.write_text(MODEL_KEY)
    os.chmod(key, 0o600)
    return key


def _sandbox_here() -> Sandbox:
    sandbox = available(SandboxSettings())
    if sandbox is None:
        pytest.skip("no sandbox backend works on this machine (Landlock or bubblewrap)")
    return sandbox


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    os.system(f"git -C {ws} init -q")
    home.mkdir(mode=0o700)
    return ws, home


def test_run_ends_budget_exhausted_when_claude_hits_max_turns_with_nothing_staged(
        tmp_path: Path, claude_bin: str) -> None:
    with AnthropicModel([Shell("true")] * 15) as model:
        settings = cli_home(tmp_path, "claude", claude_bin, model.url,
                            target_dir=target_with_turn_cap(tmp_path, 10))
        open_issue(settings, "Shorter tours", "Please try local search on tour.")
        state = tick_until(settings, ended, timeout_s=180)
    (run,) = state.runs.values()
    assert run.ending == "budget-exhausted"
    assert not run.outage


def test_leg_reports_permission_denied_when_claude_exits_zero_after_a_denial(
        tmp_path: Path, claude_bin: str) -> None:
    ws, home = _workspace(tmp_path)
    with AnthropicModel([Shell("echo x > denied.txt"), Text("could not write")]) as model:
        cli = CliSettings(binary=claude_bin, model="claude-scripted", key_file=_key(tmp_path),
                          base_url=model.url, allowed_tools=("Read",), max_retries=0)
        result = ClaudeHarness(cli).run("write a file", ws, home, None,
                                        SessionLimits(max_turns=5, minutes=2))
    assert result.stop_reason == "permission_denied" and result.is_error
    assert result.error_detail is not None and "Bash" in result.error_detail
    assert result.final_text == "could not write"
    assert not (ws / "denied.txt").exists()


REFUSALS = [
    pytest.param(401, "authentication_error", "auth", 45, id="401"),
    pytest.param(529, "overloaded_error", "overload", 5, id="529"),
]


def _refusing_model(kind: str, status: int, error_type: str) -> tuple[ScriptedModel, str]:
    if kind == "claude":
        claude = AnthropicModel([Fail(status, error_type)])
        return claude, claude.url
    codex = OpenAIModel([Fail(status, error_type)])
    return codex, f"{codex.url}/v1"


@pytest.mark.parametrize("kind", ["claude", "codex"])
@pytest.mark.parametrize(("status", "error_type", "refusal", "minutes"), REFUSALS)
def test_run_waits_on_its_endpoint_and_resumes_after_cooldown_when_model_api_refuses(
        tmp_path: Path, kind: str, status: int, error_type: str, refusal: str,
        minutes: int, request: pytest.FixtureRequest) -> None:
    binary = request.getfixturevalue(f"{kind}_bin")
    model, url = _refusing_model(kind, status, error_type)
    model.turns += [Shell("python .outerloop/syscall stop"), Text("stopped")]
    with model:
        settings = cli_home(tmp_path, kind, binary, url)
        issue = open_issue(settings, "Shorter tours", "Please try local search on tour.")
        state = tick_until(settings, lambda s: "default" in s.endpoints and any(
            s.endpoint_wait(r) for r in s.runs.values()), timeout_s=180)
        (run,) = state.runs.values()
        latch = state.endpoints["default"]
        assert not run.ended and latch.down and latch.refusal == refusal
        assert run.leg_refused and run.empty_legs == 0 and run.wakes_without_progress == 0
        until = endpoints.cooled_at(latch)
        assert until == parse_stamp(latch.at) + timedelta(minutes=minutes)
        assert endpoints.blocked(latch, datetime.now(UTC))
        run_tick(settings)
        run_tick(settings)
        during = state_of(settings)
        assert [r.run_id for r in during.runs.values() if r.issue == issue] == [run.run_id], \
            "the waiting run keeps its claim: no second run, no release"
        assert during.endpoint_wait(during.runs[run.run_id]) is not None, "no retry yet"
        assert len(model.requests) == 1
        clock.shift((until - datetime.now(UTC)).total_seconds() + 5)  # the cooldown is over
        try:
            state = tick_until(settings, ended, timeout_s=180)
        finally:
            clock.shift(0)
    (run,) = state.runs.values()
    assert run.ending == "negative-result" and not run.outage
    assert [j.purpose for j in state.jobs.values() if j.run == run.run_id].count("retry") == 1
    again = (settings.home / "runs" / run.run_id / "legs" / "002-prompt.md").read_text()
    assert endpoint_gate.AGAIN_NOTE in again and "Shorter tours" in again


def _alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmdline.strip() == marker:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_session_and_its_children_die_when_walltime_passes(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    binary = request.getfixturevalue(f"{kind}_bin")
    ws, home = _workspace(tmp_path)
    marker = "sleep 313.25" if kind == "claude" else "sleep 317.25"
    turns: list[Turn] = [Shell(f"bash -c '{marker} & wait'")] * 20
    model: ScriptedModel = AnthropicModel(turns) if kind == "claude" else OpenAIModel(turns)
    url = model.url if kind == "claude" else f"{model.url}/v1"
    with model:
        cli = CliSettings(binary=binary, model="scripted", key_file=_key(tmp_path),
                          base_url=url, max_retries=0, seconds_per_minute=6.0)
        # confined as the kernel runs it (Codex's own bwrap cannot start with Debian's)
        confinement = Confinement(sandbox=_sandbox_here(), home=tmp_path / "outerloop-home")
        harness = (ClaudeHarness(cli, confinement) if kind == "claude"
                   else CodexHarness(cli, confinement))
        started = time.monotonic()
        result = harness.run("sleep a long time", ws, home, None,
                             SessionLimits(max_turns=5, minutes=1))
        took = time.monotonic() - started
    assert result.stop_reason == "timeout" and result.is_error, result
    assert took < 30
    deadline = time.monotonic() + 5
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(marker) == []
