"""``outerloop line reset``: a slot's stale research line is started afresh (issue 49
point 5). Through real ticks on the local forge: a first run leaves its memory on the
slot's line; after the reset, the slot's next run starts a new line from the base
(``agents/agent-01-L2``) with no memory, and the old line stays on the forge as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.ledger.state import State
from tests.e2e.test_research_lines import target_with_lines
from tests.support import (
    TARGET,
    forge,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e

MEMORY = "# Memory of agent-01\n\nMEMO-STALE: a dead end\n"
SCRIPT = ("legs:\n  - - shell: \"test ! -e AGENT_MEMORY.md\"\n"
          "    - write: {path: AGENT_MEMORY.md, content: " + json.dumps(MEMORY) + "}\n"
          "    - write: {path: report.md, content: \"# Notes only\\n\\nNothing measured.\\n\"}\n"
          "    - syscall: \"stop --report report.md\"\n")


def _settled(count: int) -> object:
    def done(state: State) -> bool:
        runs = list(state.runs.values())
        return len(runs) == count and all(
            r.ended and (r.line is None or not r.line.unpushed) for r in runs)
    return done


def _reset(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli_main, ["line", "reset", *args, "--home", str(home)])
    return result.exit_code, result.output


def test_a_reset_line_starts_afresh_from_the_base_and_the_old_line_stays(
        tmp_path: Path) -> None:
    script = tmp_path / "agent.yaml"
    script.write_text(SCRIPT)
    settings = jobs_import_this_checkout(make_home(
        tmp_path, script, target_dir=target_with_lines(tmp_path / "target")))
    local = forge(settings)
    main0 = local.branch_head(TARGET, "main")
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, _settled(1), timeout_s=300)  # type: ignore[arg-type]
    old = local.branch_head(TARGET, "agents/agent-01")
    assert old is not None and old != main0

    code, out = _reset(settings.home, "demo/nope", "agent-01")
    assert code != 0 and "not a target" in out
    code, out = _reset(settings.home, TARGET, "me")
    assert code != 0 and "not an agent slot" in out
    code, out = _reset(settings.home, TARGET, "agent-01", "--reason", "a dead end")
    assert code == 0, out
    assert "agents/agent-01-L2" in out and "agents/agent-01 stays" in out

    open_issue(settings, "Shorter tours again", "Please try local search on tour again.")
    state = tick_until(settings, _settled(2), timeout_s=300)  # type: ignore[arg-type]
    run2 = max(state.runs.values(), key=lambda r: r.queued_at)
    assert run2.ending == "negative-result", run2.end_reason  # its memory was not there
    brief = (settings.home / "runs" / run2.run_id / "legs" / "001-prompt.md").read_text()
    assert "`agents/agent-01-L2`" in brief and "MEMO-STALE" not in brief
    assert local.branch_head(TARGET, "agents/agent-01") == old  # the old line as it was
    fresh = local.branch_head(TARGET, "agents/agent-01-L2")
    assert fresh is not None and fresh != old
    shown = CliRunner().invoke(cli_main, ["explain", run2.run_id, "--home",
                                          str(settings.home)]).output
    assert "on the research line agents/agent-01-L2" in shown
    assert "saved on the research line as" in shown
    assert "pushed the research line agents/agent-01-L2" in shown
