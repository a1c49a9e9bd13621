"""`stop --withdraw REASON`: the agent closes its own pull request. Through real ticks on
the local forge with local compute and a scripted agent: the run is credited and in
review, an operator message wakes it, the agent withdraws; the tick posts the reason on
the PR (fenced, as the agent's), closes the PR, and the run ends ``withdrawn``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.text import AGENT_WROTE
from tests.support import (
    AGENTS,
    TARGET,
    ended,
    forge,
    in_review,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e

REASON = "WD-51c: the gain came from a cache my launch left warm; re-measure before trusting it"


def _withdrawing_agent(tmp_path: Path) -> Path:
    """The known good tinytsp agent, whose review wake withdraws instead of answering."""
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    script["legs"][2] = [{"expect": "## Message from the operator"},
                         {"syscall": f'stop --withdraw "{REASON}"'}]
    path = tmp_path / "withdraw.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def test_stop_withdraw_closes_the_runs_pr_with_the_reason_and_ends_withdrawn(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, _withdrawing_agent(tmp_path))
    issue = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=180)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    local = forge(settings)
    assert local.get_pr(TARGET, run.pr_number).state == "open"
    sent = CliRunner().invoke(cli_main, ["message", run.run_id, "Please look again at the "
                                         "timing.", "--home", str(settings.home)])
    assert sent.exit_code == 0, sent.output  # wakes the run parked in review

    state = tick_until(settings, lambda s: ended(s) and s.runs[run.run_id].report_posted,
                       timeout_s=180)
    run = state.runs[run.run_id]
    assert run.ending == "withdrawn" and run.withdrawn == REASON
    assert f"withdrew pull request #{run.pr_number}" in run.end_reason
    assert run.pr_number is not None
    assert local.get_pr(TARGET, run.pr_number).state == "closed"
    kernel = [c.body for c in local.list_comments(TARGET, run.pr_number)
              if c.author == settings.forge.login]
    (post,) = [b for b in kernel if "outerloop:withdrawn" in b]
    assert "the agent of run" in post and "withdrew it" in post
    quoted = post.split(AGENT_WROTE, 1)[1]
    assert REASON in quoted.split("```", 2)[1]  # inside the fence, as the agent's
    reports = [c.body for c in local.list_comments(TARGET, issue)
               if "outerloop:report" in c.body]
    assert len(reports) == 1 and "withdrawn" in reports[0]
    for _ in range(2):  # later ticks post and close nothing again
        tick_until(settings, lambda s: True)
    again = [c for c in local.list_comments(TARGET, run.pr_number)
             if "outerloop:withdrawn" in c.body]
    assert len(again) == 1
