"""Steps that wait on a human, through real ticks (issue 48, point 1): a pull request the
forge refuses for rights waits on a human (status, its JSON, the board, doctor, one post
on the issue), is tried again slowly, and opens by itself once the rights are fixed; a
credited revision whose PR branch a maintainer moved is published without losing the
maintainer's commit."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop import clock
from outerloop.cli.status_cmd import status
from outerloop.config import Settings
from outerloop.doctor.waits import check_human_waits
from outerloop.forge.local import REFUSE_FILE
from outerloop.human_waits import human_waits
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import State
from outerloop.retry_rule import HUMAN_RETRY_S
from tests.github.fake import FakeGitHub
from tests.support import (
    AGENTS,
    TARGET,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e
REFUSED = {"message": "Resource not accessible by integration",
           "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"}


@pytest.fixture(autouse=True)
def _clock_set_right_after() -> Iterator[None]:
    yield
    clock.shift(0)


def _waiting(state: State) -> bool:
    return bool(human_waits(state))


def _status_json(settings: Settings) -> dict[str, object]:
    done = CliRunner().invoke(status, ["--home", str(settings.home), "--json"])
    assert done.exit_code == 0, done.output
    return dict(json.loads(done.output))


def _pr_tries(settings: Settings) -> int:
    """How many times the kernel tried to open the run's PR (its ``failed`` lines)."""
    return sum(1 for line in _ledger_lines(settings)
               if line.get("kind") == "failed" and str(line.get("key", "")).startswith("pr:"))


def _ledger_lines(settings: Settings) -> list[dict[str, object]]:
    found = []
    for path in (settings.home / "ledger").rglob("*.jsonl"):
        found += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return found


def _shows_the_wait_then_resumes(settings: Settings, comments: object, fix: object) -> None:
    """The run waits on a human for its PR: status, its JSON, the board and doctor say so
    with the fix; one post on the issue; ticks in the same minutes do not try again;
    once ``fix()`` and ``HUMAN_RETRY_S`` later the PR opens and the wait is gone."""
    state = tick_until(settings, _waiting, timeout_s=600)
    (run,) = state.runs.values()
    assert (run.state, run.park_reason, run.pr_number) == ("parked", "publish", None)
    (wait,) = human_waits(state)
    assert (wait.run, wait.cause, wait.step) == (run.run_id, "rights",
                                                 "opening its pull request")
    run_tick(settings)  # the human lane tells the issue
    run_tick(settings)
    data = _status_json(settings)
    (shown,) = data["human_waits"]  # type: ignore[misc]
    assert shown["run"] == run.run_id and shown["cause"] == "rights" and "token" in shown["fix"]
    (row,) = [r for r in data["runs"] if r["run"] == run.run_id]  # type: ignore[attr-defined]
    assert row["waiting"].startswith("on a human: opening its pull request")
    text = CliRunner().invoke(status, ["--home", str(settings.home)]).output
    assert f"waits on a human: run {run.run_id}: opening its pull request" in text
    assert "waits on a human: opening its pull request" in (
        settings.home / "board" / "CLIMB.md").read_text()
    (check,) = check_human_waits(settings)
    assert check.status == "fail" and run.run_id in check.detail and "rights" in check.detail
    assert "token" in check.fix
    assert _pr_tries(settings) == 1  # not every tick: once per HUMAN_RETRY_S
    assert assert_one_post(comments, run.issue)

    clock.shift(HUMAN_RETRY_S + 30)  # still refused: tried again once, no second post
    run_tick(settings)
    assert _pr_tries(settings) == 2 and state_of(settings).runs[run.run_id].pr_number is None
    run_tick(settings)
    assert _pr_tries(settings) == 2

    fix()  # type: ignore[operator]
    clock.shift(2 * (HUMAN_RETRY_S + 30))
    state = tick_until(settings, in_review, timeout_s=180)
    assert state.runs[run.run_id].pr_number is not None
    assert human_waits(state, clock.now()) == []
    assert _status_json(settings)["human_waits"] == []
    (check,) = check_human_waits(settings)
    assert check.status == "ok"
    run_tick(settings)
    assert assert_one_post(comments, run.issue)


def assert_one_post(comments: object, issue: int | None) -> bool:
    bodies = comments(issue)  # type: ignore[operator]
    waiting = [b for b in bodies if "outerloop:waiting" in b]
    assert len(waiting) == 1, bodies
    assert "without a person" in waiting[0] and "Fix:" in waiting[0]
    return True


def test_pr_refused_for_rights_on_the_local_forge_waits_on_a_human_then_opens_once_fixed(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(make_home(tmp_path))
    refuse = settings.home / "forge" / REFUSE_FILE
    refuse.write_text(f"open_pr {TARGET}\n")
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    local = forge(settings)

    def comments(issue: int) -> list[str]:
        return [c.body for c in local.list_comments(TARGET, issue)]

    _shows_the_wait_then_resumes(settings, comments, refuse.unlink)


@pytest.mark.github
def test_pr_refused_403_on_github_waits_on_a_human_then_opens_once_the_token_is_fixed(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    from tests.e2e.test_github_research_run import _as, github_home

    settings = jobs_import_this_checkout(github_home(tmp_path, fake_github))
    fake_github.fail("POST", r"/pulls$", 403, times=1000, body=REFUSED)
    _as(fake_github, "maintainer").create_issue(title="Shorter tours",
                                                body="Please try local search on tour.")

    def comments(issue: int) -> list[str]:
        return [c["body"] for c in fake_github.comments_on(TARGET, issue)]

    _shows_the_wait_then_resumes(settings, comments, fake_github.faults.clear)
    assert len(fake_github.repos[TARGET].pulls) == 1
    assert fake_github.violations == []


def _resubmitting_agent(tmp_path: Path) -> Path:
    """tinytsp's 2-opt agent whose third leg (a reviewer's comment) changes a comment of
    its solver and submits again: a credited revision of an open PR."""
    first = (AGENTS / "tinytsp-2opt.yaml").read_text().split("  # Leg 3")[0]
    solver = first.split("content: |\n", 1)[1].split("    - shell:")[0]
    path = tmp_path / "agent.yaml"
    path.write_text(first + (
        "  # Leg 3: a reviewer asked for a clearer docstring; submit again.\n"
        "  - - expect: \"Reviewer feedback\"\n"
        "    - write:\n"
        "        path: solver/tour.py\n"
        "        content: |\n"
        + solver.replace("Tour construction for tinytsp.",
                         "Tour construction for tinytsp (revised).")
        + "    - syscall: \"submit --report report.md\"\n"
        "    - syscall: sleep\n"))
    return path


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def _maintainer_pushes_to(bare: Path, branch: str, work: Path) -> str:
    """A maintainer's fix-up commit on ``branch`` of the forge: its sha."""
    _git("clone", "--quiet", "--branch", branch, str(bare), str(work))
    (work / "MAINTAINER.md").write_text("A fix-up by the maintainer.\n")
    _git("add", "MAINTAINER.md", cwd=work)
    _git("-c", "user.name=maintainer", "-c", "user.email=m@example.com", "commit", "--quiet",
         "-m", "maintainer fix-up", cwd=work)
    _git("push", "--quiet", "origin", branch, cwd=work)
    return _git("rev-parse", "HEAD", cwd=work)


def test_credited_revision_whose_pr_branch_a_maintainer_moved_is_published_keeping_both(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(make_home(tmp_path, _resubmitting_agent(tmp_path)))
    issue = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=600)
    (run,) = state.runs.values()
    first_pr, branch = run.pr_number, run.pr_head
    assert first_pr is not None and branch is not None
    local = forge(settings)
    bare = local.repo_dir(TARGET)
    fixup = _maintainer_pushes_to(bare, branch, tmp_path / "maintainer")
    local.comment_as(TARGET, first_pr, "Please make the docstring clearer.", "maintainer")

    state = tick_until(settings, lambda s: s.runs[run.run_id].pr_number not in (None, first_pr),
                       timeout_s=900)
    moved = state.runs[run.run_id]
    assert moved.moved_heads == [branch] and moved.pr_head == f"{branch}-2"
    assert moved.publish is not None and moved.published_sha == moved.publish.seal_sha
    new_pr = local.get_pr(TARGET, moved.pr_number or 0)
    assert (new_pr.head, new_pr.head_sha, new_pr.state) == (
        f"{branch}-2", moved.publish.seal_sha, "open")
    assert local.branch_head(TARGET, branch) == fixup  # the maintainer's commit is kept
    assert local.get_pr(TARGET, first_pr).state == "open"
    told = [c.body for c in local.list_comments(TARGET, first_pr) if "outerloop:moved" in c.body]
    assert len(told) == 1 and f"{branch}-2" in told[0] and "stay on this pull request" in told[0]
    assert human_waits(state) == []
    run_tick(settings)
    assert len([c for c in local.list_comments(TARGET, first_pr)
                if "outerloop:moved" in c.body]) == 1
    assert not [c for c in local.list_comments(TARGET, issue) if "outerloop:waiting" in c.body]
