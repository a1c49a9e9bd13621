"""``outerloop forge``: the human CLI round-trips through the real local forge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from outerloop.cli import main
from outerloop.forge.local import LocalForge

REPO = "acme/demo"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    root.mkdir(mode=0o700)
    (root / "outerloop.toml").write_text(f'[[targets]]\nrepo = "{REPO}"\n')
    src = tmp_path / "src"
    src.mkdir()
    (src / "bench.py").write_text("print(1)\n")
    result = cli(root, "repo", "import", str(src), "--as", REPO)
    assert result.exit_code == 0, result.output
    return root


def cli(home: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["forge", *args, "--home", str(home)])


def test_import_reports_the_default_branch_when_it_succeeds(home: Path) -> None:
    assert cli(home, "repo", "list").output.strip() == REPO


def test_issue_round_trips_when_opened_then_shown(home: Path) -> None:
    opened = cli(home, "issue", "open", "--title", "Speed up", "--body", "bench: fast")
    assert opened.output.strip() == "opened #1"
    shown = cli(home, "issue", "show", "1")
    assert "Speed up [open]" in shown.output
    assert "by maintainer (OWNER)" in shown.output
    assert "bench: fast" in shown.output


def test_issue_list_uses_the_only_target_when_repo_is_omitted(home: Path) -> None:
    cli(home, "issue", "open", "--title", "one")
    assert "#1\tone\t(maintainer)" in cli(home, "issue", "list").output


def test_comment_is_attributed_to_the_as_user_when_given(home: Path) -> None:
    cli(home, "issue", "open", "--title", "t")
    cli(home, "user", "add", "carol", "--role", "collaborator")
    done = cli(home, "issue", "comment", "1", "--body", "please", "--as", "carol")
    assert done.exit_code == 0, done.output
    assert "by carol (COLLABORATOR)" in cli(home, "issue", "show", "1").output


def test_label_is_listed_when_applied(home: Path) -> None:
    cli(home, "issue", "open", "--title", "t", "--as", "stranger")
    cli(home, "issue", "label", "1", "outerloop:approved")
    assert "[outerloop:approved]" in cli(home, "issue", "list").output


def test_missing_issue_is_one_line_error_when_shown(home: Path) -> None:
    result = cli(home, "issue", "show", "42")
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert "no issue or pull request #42" in result.output and "fix:" in result.output


def test_unknown_repo_is_one_line_error_naming_import_when_used(home: Path) -> None:
    result = cli(home, "issue", "list", "--repo", "acme/other")
    assert result.exit_code == 1
    assert "forge repo import" in result.output


def test_user_list_shows_roles_when_users_were_added(home: Path) -> None:
    cli(home, "user", "add", "dave", "--role", "none")
    assert "dave\tnone" in cli(home, "user", "list").output


def test_help_names_the_default_acting_user_when_asked(home: Path) -> None:
    assert "maintainer" in CliRunner().invoke(main, ["forge", "--help"]).output


@pytest.fixture
def pr(home: Path, tmp_path: Path) -> int:
    forge = LocalForge(home / "forge", "outerloop")
    ws = tmp_path / "ws"
    forge.fetch(REPO, ws, "main")
    (ws / "bench.py").write_text("print(2)\n")
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "commit", "-qam", "faster"], cwd=ws, env=env, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True,
                         text=True, check=True).stdout.strip()
    forge.push(REPO, ws, sha, "outerloop/agent-01/r1")
    return forge.open_pr(REPO, "outerloop/agent-01/r1", "main", "[agent-01] faster", "B").number


def test_pr_list_and_show_describe_the_pr_when_open(home: Path, pr: int) -> None:
    assert f"#{pr}\t[agent-01] faster" in cli(home, "pr", "list").output
    assert "outerloop/agent-01/r1" in cli(home, "pr", "show", str(pr)).output


def test_pr_diff_prints_the_change_when_asked(home: Path, pr: int) -> None:
    assert "+print(2)" in cli(home, "pr", "diff", str(pr)).output


def test_pr_comment_and_review_show_up_when_posted(home: Path, pr: int) -> None:
    cli(home, "pr", "comment", str(pr), "--body", "why 2?")
    cli(home, "pr", "review", str(pr), "--body", "fine", "--state", "APPROVED")
    shown = cli(home, "pr", "show", str(pr)).output
    assert "why 2?" in shown and "APPROVED by maintainer" in shown


def test_pr_merge_lands_the_change_when_a_maintainer_merges(home: Path, pr: int) -> None:
    result = cli(home, "pr", "merge", str(pr))
    assert result.exit_code == 0, result.output
    forge = LocalForge(home / "forge", "outerloop")
    assert forge.read_file(REPO, "bench.py", "main") == b"print(2)\n"
    assert "[merged]" in cli(home, "pr", "list", "--state", "all").output


def test_pr_merge_is_refused_when_the_user_cannot_write(home: Path, pr: int) -> None:
    result = cli(home, "pr", "merge", str(pr), "--as", "stranger")
    assert result.exit_code == 1 and "no write access" in result.output


def test_pr_close_closes_unmerged_when_asked(home: Path, pr: int) -> None:
    assert cli(home, "pr", "close", str(pr)).exit_code == 0
    assert "[closed]" in cli(home, "pr", "list", "--state", "closed").output


def test_draft_pr_merges_when_marked_ready_first(home: Path, pr: int) -> None:
    forge = LocalForge(home / "forge", "outerloop")
    forge.close_pr_as(REPO, pr, "outerloop")
    draft = forge.open_pr(REPO, "outerloop/agent-01/r1", "main", "again", "", draft=True)
    assert "[open] [draft]" in cli(home, "pr", "list").output
    assert cli(home, "pr", "show", str(draft.number)).output.startswith(
        f"#{draft.number} again [open] [draft]")
    refused = cli(home, "pr", "merge", str(draft.number))
    assert refused.exit_code == 1 and "pr ready" in refused.output
    assert cli(home, "pr", "ready", str(draft.number)).exit_code == 0
    assert cli(home, "pr", "merge", str(draft.number)).exit_code == 0
