"""The real Claude Code and Codex CLIs run inside outerloop's sandbox (their own
sandboxes off): the agent's shell walks up to ``keys/`` and the ledger and is refused,
while it still works in its workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.conftest import FORGE_SECRET, cli_home
from tests.harness.models import AnthropicModel, OpenAIModel, ScriptedModel, Shell, Text, Turn
from tests.support import open_issue, tick_until

pytestmark = pytest.mark.harness  # kept out of `-m security`: it needs npm

PROBE = ("{ cat ../../../keys/forge-token; echo \"key:$?\"; "
         "echo forged >> ../../../ledger/demo__tinytsp/tick.jsonl; echo \"ledger:$?\"; "
         "echo fine > inside.txt; echo \"ws:$?\"; } > .outerloop/probe.txt 2>&1")


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_agent_cli_shell_cannot_read_keys_or_write_ledger_when_sandboxed(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    binary = request.getfixturevalue(f"{kind}_bin")
    turns: list[Turn] = [Shell(PROBE), Shell("python .outerloop/syscall stop"), Text("done")]
    model: ScriptedModel = AnthropicModel(turns) if kind == "claude" else OpenAIModel(turns)
    with model:
        url = model.url if kind == "claude" else f"{model.url}/v1"
        settings = cli_home(tmp_path, kind, binary, url)
        open_issue(settings, "Shorter tours", "Please try local search on tour.")
        state = tick_until(settings, lambda s: any(r.ended for r in s.runs.values()),
                           timeout_s=180)
    (run,) = state.runs.values()
    ws = settings.home / "runs" / run.run_id / "ws"
    probe = (ws / ".outerloop" / "probe.txt").read_text()
    assert "key:1" in probe and "ledger:1" in probe and "ws:0" in probe, probe
    assert FORGE_SECRET not in probe
    assert "forged" not in (settings.home / "ledger" / "demo__tinytsp" / "tick.jsonl").read_text()
