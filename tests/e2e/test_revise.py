"""Revise before a draft: a blocking review finding on a credited candidate goes back to
its agent (fenced, from the review panel), the revision is measured and reviewed again;
a draft opens only when the agent cannot revise. And the report check: numbers a report
states about the metric against what the gate measured. Real ticks on the local forge,
local compute, scripted agents and judges."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.config import Settings
from outerloop.ledger.state import RunRecord
from tests.support import AGENTS, TARGET, forge, in_review, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

FINDING = "JUDGE-FOUND: 2-opt skips the closing edge"
FIX_MARK = "closing edge checked"

BLOCKED = json.dumps({"verdict": "block", "findings": [{
    "severity": "blocking", "file": "solver/tour.py", "line": 42, "summary": FINDING,
    "detail": "see the loop bound"}]})
BLOCK_UNLESS_FIXED = f"""\
legs:
  - - expect: "review panel"
    - shell: |
        if grep -q '{FIX_MARK}' candidate/solver/tour.py; then
          printf '%s' '{{"verdict": "approve"}}' > verdict.json
        else
          printf '%s' '{BLOCKED}' > verdict.json
        fi
"""
"""A judge that blocks the candidate until its tour.py carries the fix's mark."""


def _first_two_legs() -> str:
    """The example agent's first two legs (write 2-opt, launch; report and submit)."""
    return (AGENTS / "tinytsp-2opt.yaml").read_text().split("  # Leg 3")[0]


def _agent(tmp_path: Path, third_leg: str, report_leg: str | None = None) -> Path:
    legs = _first_two_legs()
    if report_leg is not None:
        legs = legs.split("  # Leg 2")[0] + report_leg
    path = tmp_path / "agent.yaml"
    path.write_text(legs + third_leg)
    return path


def _revise_leg(mark: str) -> str:
    return (f"  - - expect: \"{FINDING}\"\n"
            f"    - shell: \"printf '# {mark}\\\\n' >> solver/tour.py\"\n"
            "    - syscall: \"submit --report report.md\"\n"
            "    - syscall: sleep\n")


def _judge(tmp_path: Path) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(BLOCK_UNLESS_FIXED)
    return path


def _run(settings: Settings) -> RunRecord:
    from tests.support import state_of

    (run,) = state_of(settings).runs.values()
    return run


def _fenced(text: str, needle: str) -> bool:
    """``needle`` sits inside a fenced block of ``text`` (a run of 3+ backticks opens
    and the same run closes it)."""
    for match in re.finditer(r"^(`{3,})[^\n]*\n(.*?)^\1\s*$", text, flags=re.M | re.S):
        if needle in match.group(2):
            return True
    return False


def _wake_with_findings(settings: Settings, run_id: str) -> str:
    legs = settings.home / "runs" / run_id / "legs"
    (prompt,) = [p.read_text() for p in sorted(legs.glob("*-prompt.md"))
                 if FINDING in p.read_text()]
    return prompt


def _status_revising(settings: Settings) -> object:
    shown = CliRunner().invoke(cli_main, ["status", "--json", "--home", str(settings.home)])
    assert shown.exit_code == 0, shown.output
    (row,) = json.loads(shown.output)["runs"]
    return row["revising"]


def test_blocking_finding_wakes_the_agent_and_an_approved_revision_opens_ready(
        tmp_path: Path) -> None:
    agent = _agent(tmp_path, _revise_leg(FIX_MARK))
    settings = make_home(tmp_path, agent, judge=_judge(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    revising: list[object] = []

    def seen_revising(state: object) -> bool:
        run = _run(settings)
        if run.revising and not revising:
            revising.append(_status_revising(settings))
        return in_review(state)  # type: ignore[arg-type]

    tick_until(settings, seen_revising, timeout_s=240)
    run = _run(settings)
    assert [v.verdict for v in run.verdicts] == ["improved", "improved"]
    assert run.revisions == 1 and not run.revising
    prompt = _wake_with_findings(settings, run.run_id)
    assert "outerloop review panel" in prompt and "## Revise" in prompt
    assert _fenced(prompt, FINDING) and _fenced(prompt, "see the loop bound")
    assert "revision round 1 of 1" in prompt
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert not pr.draft
    review = pr.body.split("## Review", 1)[1]
    assert "This candidate is a revision" in review
    assert FINDING not in review and "report check" not in review
    assert pr.head_sha == run.verdicts[-1].seal_sha
    if revising:  # a tick landed while the agent revised: status said so
        assert revising == [1]


def test_agent_that_cannot_fix_the_finding_gets_a_draft_carrying_it(tmp_path: Path) -> None:
    agent = _agent(tmp_path, (f"  - - expect: \"{FINDING}\"\n"
                              "    - syscall: \"stop --report report.md\"\n"))
    settings = make_home(tmp_path, agent, judge=_judge(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    tick_until(settings, in_review, timeout_s=240)
    run = _run(settings)
    assert run.submissions == 1 and run.revisions == 1
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert pr.draft and pr.head_sha == run.verdicts[0].seal_sha
    review = pr.body.split("## Review", 1)[1]
    assert "- **blocking** from `judge-1` at `solver/tour.py:42`:" in review
    assert FINDING in review
    assert "sent its findings back to the agent to revise (round 1 of 1" in review
    said = [c.body for c in forge(settings).list_comments(TARGET, run.issue or 0)
            if "The agent wrote" in c.body]  # its stop report: why it could not
    assert any("2-opt after nearest neighbour" in body for body in said), said


def test_revision_the_panel_still_blocks_ends_as_a_draft_after_the_last_round(
        tmp_path: Path) -> None:
    agent = _agent(tmp_path, _revise_leg("tried something else"))
    settings = make_home(tmp_path, agent, judge=_judge(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    tick_until(settings, in_review, timeout_s=240)
    run = _run(settings)
    assert [v.verdict for v in run.verdicts] == ["improved", "improved"]
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert pr.draft and pr.head_sha == run.verdicts[1].seal_sha
    review = pr.body.split("## Review", 1)[1]
    assert FINDING in review and "This candidate is a revision" in review
    assert run.revisions == 1  # the bound: no second round
    reviews = settings.home / "runs" / run.run_id / "review"
    assert (reviews / "s1-j1").is_dir() and (reviews / "s2-j1").is_dir()


FABRICATED_REPORT_LEG = """\
  # Leg 2: a report whose number the gate never measured.
  - - expect: "try-2opt"
    - write:
        path: report.md
        content: |
          # 2-opt after nearest neighbour

          The mean tour length drops to 4.10 with 2-opt.
    - syscall: "submit --report report.md"
    - syscall: sleep
"""


def test_report_claiming_a_number_the_gate_did_not_measure_gets_a_finding(
        tmp_path: Path) -> None:
    agent = _agent(tmp_path, "", report_leg=FABRICATED_REPORT_LEG)
    settings = make_home(tmp_path, agent)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    tick_until(settings, in_review, timeout_s=240)
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert not pr.draft  # advisory: the gate's numbers stand, the reader is told
    review = pr.body.split("## Review", 1)[1]
    assert "- **advisory** from `report check`:" in review
    assert "The report states 4.10 about `mean_tour_length`" in review
    assert "The gate measured: baseline " in review


REVISER_NAP_S = "30.0419"
"""A nap no other process takes: the test finds the revising leg by its argv."""


def test_revision_leg_killed_is_recovered_with_the_findings_delivered_again(
        tmp_path: Path) -> None:
    """The job running the revision leg dies (SIGKILL from outside); the recovery leg
    is shown the panel's findings again (they count as delivered only when a leg
    ends), revises, and its approved revision opens ready."""
    import os
    import signal
    import threading
    import time

    from tests.e2e.test_review import _attempt_job_above, _pids_running

    killed_leg = (f"  - - expect: \"{FINDING}\"\n"
                  f"    - shell: \"sleep {REVISER_NAP_S}\"\n")
    agent = _agent(tmp_path, killed_leg + _revise_leg(FIX_MARK))
    settings = make_home(tmp_path, agent, judge=_judge(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    killed: list[int] = []

    def kill_the_revising_job() -> None:
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline and not killed:
            job = _attempt_job_above(settings.home / "jobs",
                                     _pids_running(["sleep", REVISER_NAP_S]))
            if job is not None:
                os.kill(job, signal.SIGKILL)
                killed.append(job)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_revising_job, daemon=True)
    killer.start()
    tick_until(settings, in_review, timeout_s=300)
    killer.join(timeout=1)
    assert killed, "the revising leg never started"
    run = _run(settings)
    assert [v.verdict for v in run.verdicts] == ["improved", "improved"]
    assert run.revisions == 1  # asked once: the recovery did not review again
    legs = settings.home / "runs" / run.run_id / "legs"
    shown = [p.name for p in sorted(legs.glob("*-prompt.md")) if FINDING in p.read_text()]
    assert shown == ["003-prompt.md", "004-prompt.md"], shown
    assert "interrupted" in (legs / "004-prompt.md").read_text()
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert not pr.draft
    assert len(list((settings.home / "runs" / run.run_id / "review").glob("s1-j1"))) == 1


def test_wake_job_dying_right_after_the_ask_wakes_the_agent_without_a_second_review(
        tmp_path: Path) -> None:
    """The job dies the moment ``revision_asked`` is on record; the recovery wake finds
    the ask for the current submission and only wakes the agent (a second review would
    find the round spent and open a draft at once)."""
    agent = _agent(tmp_path, _revise_leg(FIX_MARK))
    settings = make_home(tmp_path, agent, judge=_judge(tmp_path))
    (settings.home / "CRASH_AT").write_text("after-event:revision_asked\n")
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    tick_until(settings, in_review, timeout_s=300)
    assert (settings.home / "CRASH_AT").read_text() == ""  # the crash happened
    run = _run(settings)
    assert run.revisions == 1
    assert [v.verdict for v in run.verdicts] == ["improved", "improved"]
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert not pr.draft


def test_no_revision_rounds_open_a_blocked_candidate_as_a_draft_at_once(
        tmp_path: Path) -> None:
    from outerloop.config import load_settings

    agent = _agent(tmp_path, _revise_leg(FIX_MARK))
    settings = make_home(tmp_path, agent, judge=_judge(tmp_path))
    config = settings.home / "outerloop.toml"
    text = config.read_text()
    assert "[review]\njudges = 1\n" in text
    config.write_text(text.replace("[review]\njudges = 1\n",
                                   "[review]\njudges = 1\nrevisions = 0\n"))
    settings = load_settings(settings.home)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    tick_until(settings, in_review, timeout_s=240)
    run = _run(settings)
    assert run.revisions == 0 and run.submissions == 1
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert pr.draft and FINDING in pr.body
    assert "revision" not in pr.body.split("## Review", 1)[1]
