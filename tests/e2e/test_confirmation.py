"""A credited submission is measured once more before its PR is ready: from its sealed
commit, in a fresh pair job, with a fresh hidden seed. Through real ticks on the local
forge with a judge that always approves, so only the confirmation stands in the way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from tests.e2e.test_review import pr_of
from tests.support import AGENTS, TARGET, forge, in_review, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

LUCKY_ONCE_SECONDS = 40
"""The candidate is 2-opt only until this long after its session wrote it, and then
sleeps past it: the first pair measures 2-opt, the confirmation nearest neighbour."""


def _lucky_once_agent(tmp_path: Path) -> Path:
    solver = (AGENTS / "tinytsp-2opt.yaml").read_text().split("        content: |\n", 1)[1]
    solver = solver.split("    - shell:", 1)[0]
    two_opt = solver.replace('def solve(points: list[Point]) -> list[int]:',
                             'def _better(points: list[Point]) -> list[int]:')
    lucky = (
        "            import pathlib\n"
        "            import time\n\n"
        "            _UNTIL = float((pathlib.Path(__file__).parent / 'until.txt').read_text())\n"
        "            _LUCKY = time.time() < _UNTIL\n"
        f"            _NAP = {LUCKY_ONCE_SECONDS + 5}\n\n\n"
        "            def solve(points: list[Point]) -> list[int]:\n"
        "                if _LUCKY:\n"
        "                    return _better(points)\n"
        "                return nearest_neighbour(points)\n\n\n"
        "            if _LUCKY:\n"
        "                time.sleep(_NAP)\n")
    agent = tmp_path / "lucky-once.yaml"
    agent.write_text(
        "legs:\n"
        "  - - write:\n"
        "        path: solver/tour.py\n"
        "        content: |\n" + two_opt + lucky +
        f"    - shell: \"python3 -c 'import time; print(time.time() + {LUCKY_ONCE_SECONDS})' "
        "> solver/until.txt\"\n"
        "    - write: {path: report.md, content: \"2-opt after nearest neighbour.\"}\n"
        "    - syscall: \"submit --report report.md\"\n"
        "    - syscall: sleep\n"
        "  - - expect: \"did not reproduce\"\n"
        "    - syscall: \"stop --report report.md\"\n")
    return agent


def test_a_credit_that_does_not_reproduce_opens_a_draft_and_the_agent_is_told(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, _lucky_once_agent(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=300)
    (run,) = state.runs.values()
    assert run.verdicts[-1].verdict == "improved"  # the first pair was fooled
    (confirmation,) = run.confirmations.values()
    assert not confirmation.reproduced
    shown = CliRunner().invoke(cli_main, ["status", "--json", "--home", str(settings.home)])
    assert shown.exit_code == 0 and json.loads(shown.output)["runs"][0]["confirmed"] is False
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert pr.draft
    _, body, listed, _ = pr_of(settings)
    review = body.split("## Review")[1]
    assert "- **blocking** from `confirmation`:" in review
    assert "The credited result did not reproduce" in review
    assert "[open] [draft]" in listed
    legs = settings.home / "runs" / run.run_id / "legs"

    def told(_state: object) -> bool:
        return any("did not reproduce" in p.read_text() for p in legs.glob("*-prompt.md"))

    tick_until(settings, told, timeout_s=180)


def test_a_credit_that_reproduces_opens_ready_after_its_confirmation(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=300)
    (run,) = state.runs.values()
    (confirmation,) = run.confirmations.values()
    assert confirmation.reproduced and confirmation.candidate is not None
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert not pr.draft
    assert ("on fresh checkouts of both commits,\none after the other in one job, under the "
            "same hidden seed.\n") in pr.body
    assert "Confirmation, measured again from the candidate commit in a fresh job with a " \
           "fresh hidden seed: baseline `" in pr.body and "`: reproduced." in pr.body
    shown = CliRunner().invoke(cli_main, ["status", "--json", "--home", str(settings.home)])
    assert shown.exit_code == 0 and json.loads(shown.output)["runs"][0]["confirmed"] is True
    evals = [job.name for job in state.jobs.values()
             if job.run == run.run_id and job.purpose == "eval"]
    assert len(evals) == 2  # the submission's pair and its confirmation, one job each
    assert all("base" not in n and "cand" not in n for n in evals)
