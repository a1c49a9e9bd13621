"""An agent CLI missing on the node where the session runs is the deployment's, not the
session's (issue 51): the harness raises ``DeploymentError`` (the run waits for the
fix) instead of returning a failed session the run would read as a verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.errors import DeploymentError
from outerloop.harness.agent_cli import CliSettings, not_on_node
from outerloop.harness.base import SessionLimits
from outerloop.harness.claude import ClaudeHarness
from outerloop.harness.codex import CodexHarness

MISSING = "/nonexistent/bin/agent-cli"


def _cli() -> CliSettings:
    return CliSettings(binary=MISSING, model=None, key_file=None, base_url=None)


@pytest.mark.parametrize("kind", [ClaudeHarness, CodexHarness])
def test_missing_cli_raises_deployment_error_when_a_session_starts(
        kind: type[ClaudeHarness] | type[CodexHarness], tmp_path: Path) -> None:
    harness = kind(_cli())
    with pytest.raises(DeploymentError, match="agent CLI is not found on node"):
        harness.run("p", tmp_path, tmp_path / "home", None, SessionLimits(max_turns=1,
                                                                          minutes=1))


def test_not_on_node_names_the_path_and_the_fix_when_missing() -> None:
    line = not_on_node(MISSING)
    assert line is not None and MISSING in line and "[harness] binary" in line
    assert not_on_node("/bin/sh") is None
