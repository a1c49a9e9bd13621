"""Steering from the issue thread (issue 50 point 4): a maintainer's comment on a live
run's issue reaches the run's next wake, fenced and attributed, once; a comment by
someone without standing, and the discussion before the claim, do not. Through real
ticks on the local forge with local compute and a scripted agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from outerloop.config import Settings
from outerloop.forge.local import LocalForge
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import State
from tests.support import (
    EXAMPLE_TARGET,
    TARGET,
    ended,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    target_with_slots,
    tick_until,
)

pytestmark = pytest.mark.e2e

STEER = "STEER-42: keep the change inside tour.py and try or-opt next"
DRIVE_BY = "DRIVEBY-9: rewrite it all in Rust"
BEFORE = "BEFORE-3: the discussion before anyone claimed this"

AGENT = """\
legs:
  - - write: {path: solver/note.txt, content: "first"}
    - syscall: 'launch --name wait-a-bit --minutes 5 --why "hold the run parked" -- sleep 8'
    - syscall: sleep
  - - expect: "STEER-42: keep the change inside tour.py"
    - syscall: 'launch --name again --minutes 5 --why "one more wake" -- sleep 1'
    - syscall: sleep
  - - expect: "again"
    - syscall: stop
"""


def _steered_home(tmp_path: Path, agent_script: str, target_dir: Path = EXAMPLE_TARGET,
                  ) -> tuple[Settings, LocalForge, int]:
    """A local-forge home running ``agent_script``, a user ``drive-by`` without standing,
    and the maintainer's issue opened: (settings, the forge, the issue's number)."""
    agent = tmp_path / "agent.yaml"
    agent.write_text(agent_script)
    settings = make_home(tmp_path, agent, target_dir=target_dir)
    local = forge(settings)
    local.set_role("drive-by", "none")
    return settings, local, open_issue(settings, "Shorter tours", "Try anything on tour.")


def _parked_on_jobs(state: State) -> bool:
    return any(r.state == "parked" and r.park_reason == "jobs" and r.legs == 1
               for r in state.runs.values())


def test_a_maintainers_issue_comment_reaches_the_live_runs_next_wake_once(
        tmp_path: Path) -> None:
    settings, local, issue = _steered_home(tmp_path, AGENT)
    local.comment_as(TARGET, issue, BEFORE, "maintainer")
    state = tick_until(settings, _parked_on_jobs)
    (run,) = state.runs.values()
    local.comment_as(TARGET, issue, STEER, "maintainer")
    local.comment_as(TARGET, issue, DRIVE_BY, "drive-by")

    state = tick_until(settings, ended, timeout_s=180)
    run = state.runs[run.run_id]
    assert run.ending == "negative-result", run.end_reason
    legs = settings.home / "runs" / run.run_id / "legs"
    wake = (legs / "002-prompt.md").read_text()
    section = wake.split("(issue comment)", 1)[1]
    assert "`maintainer`" in wake.split("(issue comment)", 1)[0].rsplit("###", 1)[1]
    assert STEER in section.split("```", 2)[1]  # quoted inside the fence, as data
    assert DRIVE_BY not in wake and BEFORE not in wake
    assert STEER not in (legs / "003-prompt.md").read_text()  # delivered once


HOLD_AGENT = """\
legs:
  - - write: {path: solver/note.txt, content: "first"}
    - syscall: 'launch --name wait-a-bit --minutes 5 --why "hold the run parked" -- sleep 30'
    - syscall: sleep
  - - syscall: stop
"""


def test_a_maintainers_stop_command_on_the_issue_ends_the_run_acknowledged_once(
        tmp_path: Path) -> None:
    settings, local, issue = _steered_home(tmp_path, HOLD_AGENT)
    state = tick_until(settings, _parked_on_jobs)
    (run,) = state.runs.values()
    local.comment_as(TARGET, issue, "/outerloop stop", "drive-by")  # no standing
    local.comment_as(TARGET, issue, "/outerloop frobnicate 3", "maintainer")
    local.comment_as(TARGET, issue, "/outerloop stop enough for now\nthanks", "maintainer")
    state = tick_until(settings, ended, timeout_s=60)
    for _ in range(2):
        run_tick(settings)
    run = state_of(settings).runs[run.run_id]
    assert run.ending == "operator" and run.legs == 1, (run.ending, run.end_reason)
    assert run.end_reason == "Stopped from the thread by maintainer: enough for now"
    acks = [c.body for c in local.list_comments(TARGET, issue) if "outerloop:command" in c.body]
    assert len(acks) == 2, acks
    assert any("is not a command it knows" in a and "/outerloop widen N" in a for a in acks)
    assert any(f"outerloop stops run `{run.run_id}`, as `maintainer` asked" in a for a in acks)
    assert all("drive-by" not in a for a in acks)
    assert not [k for k in run.undelivered if k.startswith("i")]  # the agent is not told


def test_a_stop_command_on_the_pull_request_ends_the_run_in_review_once(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    local = forge(settings)
    issue = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=600)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    local.comment_as(TARGET, run.pr_number, "/outerloop stop we go another way",
                     "maintainer")
    tick_until(settings, ended, timeout_s=60)
    for _ in range(2):
        run_tick(settings)
    run = state_of(settings).runs[run.run_id]
    assert run.ending == "operator" and "we go another way" in run.end_reason
    acks = [c.body for c in local.list_comments(TARGET, run.pr_number or 0)
            if "outerloop:command" in c.body]
    assert len(acks) == 1 and "as `maintainer` asked" in acks[0]
    review_wakes = [j for j in state_of(settings).jobs.values() if "-review-" in j.name]
    assert review_wakes == []  # a command is the kernel's: it wakes no agent
    assert any("outerloop:report" in c.body for c in local.list_comments(TARGET, issue))


@pytest.mark.github
def test_on_github_an_issue_comment_reaches_the_run_and_a_stop_ends_it_once(
        tmp_path: Path) -> None:
    from github import Auth, Github

    from tests.e2e.test_github_research_run import github_home
    from tests.github.fake import FakeGitHub
    from tests.github.fixtures import KERNEL, MAINTAINER, finish

    fake = FakeGitHub(tmp_path / "fake-github").start()
    fake.create_repo(TARGET, EXAMPLE_TARGET)
    fake.grant(TARGET, MAINTAINER, "admin")
    fake.grant(TARGET, KERNEL, "write")
    try:
        agent = tmp_path / "agent.yaml"
        agent.write_text(AGENT.replace("sleep 8", "sleep 30"))
        settings = jobs_import_this_checkout(github_home(tmp_path, fake, script=str(agent)))

        def repo(login: str) -> Any:
            return Github(base_url=fake.base_url, auth=Auth.Token(fake.token_for(login)),
                          retry=None, seconds_between_requests=None,
                          seconds_between_writes=None).get_repo(TARGET)

        issue = repo(MAINTAINER).create_issue(title="Shorter tours",
                                              body="Try anything on tour.")
        state = tick_until(settings, _parked_on_jobs, timeout_s=180)
        (run,) = state.runs.values()
        issue.create_comment(STEER)
        repo("drive-by").get_issue(issue.number).create_comment("/outerloop stop")
        tick_until(settings, lambda s: any(f.text == STEER for f in s.runs[run.run_id]
                                           .feedback.values()), timeout_s=60)
        issue.create_comment("/outerloop stop done here")
        tick_until(settings, ended, timeout_s=60)
        run_tick(settings)
        run = state_of(settings).runs[run.run_id]
        assert run.ending == "operator" and run.end_reason.endswith("done here")
        acks = [c["body"] for c in fake.comments_on(TARGET, issue.number)
                if c["author"] == KERNEL and "outerloop:command" in c["body"]]
        assert len(acks) == 1 and "as `maintainer` asked" in acks[0]
        finish(fake)
    finally:
        fake.stop()


def test_a_widen_command_on_the_issue_starts_a_second_slot_on_it_acknowledged_once(
        tmp_path: Path) -> None:
    settings, local, issue = _steered_home(tmp_path, HOLD_AGENT, target_with_slots(tmp_path, 2))
    state = tick_until(settings, _parked_on_jobs)
    (first,) = state.runs.values()
    for _ in range(2):
        run_tick(settings)
    assert len(state_of(settings).runs) == 1  # the contract's width: one run per issue
    local.comment_as(TARGET, issue, "/outerloop widen 5", "drive-by")  # no standing
    local.comment_as(TARGET, issue, "/outerloop widen lots", "maintainer")
    local.comment_as(TARGET, issue, "/outerloop widen 2", "maintainer")
    state = tick_until(settings, lambda s: len(s.runs) == 2, timeout_s=60)
    for _ in range(2):
        run_tick(settings)
    state = state_of(settings)
    assert len(state.runs) == 2  # two asked, two slots: no third
    (second,) = [r for r in state.runs.values() if r.run_id != first.run_id]
    assert second.issue == issue and {first.agent, second.agent} == {"agent-01", "agent-02"}
    assert state.widened == {(TARGET, issue): 2}
    acks = [c.body for c in local.list_comments(TARGET, issue) if "outerloop:command" in c.body]
    assert len(acks) == 2, acks  # one per command with standing, however many runs read it
    assert any("`lots` is not a width; fix: `/outerloop widen N`" in a for a in acks)
    assert any(f"gives issue #{issue} up to 2 run(s) at once, as `maintainer` asked" in a
               for a in acks)

