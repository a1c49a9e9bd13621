"""The research run end to end with ``forge = "github"``: real ticks, real PyGithub and
real git over smart HTTP against the fake GitHub, humans acting through the API with
their own tokens. Afterwards the token is searched for everywhere it must not be."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from outerloop.config import Settings, load_settings
from outerloop.home import init_home
from tests.github.fake import FakeGitHub
from tests.github.fixtures import KERNEL, MAINTAINER
from tests.support import AGENTS, TARGET, ended, in_review, starting_jobs, tick_until

pytestmark = [pytest.mark.e2e, pytest.mark.github]


def github_home(tmp_path: Path, fake: FakeGitHub, script: str = "tinytsp-2opt.yaml",
                judge: Path = AGENTS / "judge-approve.yaml") -> Settings:
    home = tmp_path / "home"
    init_home(home, forge="github", compute="local", harness="scripted", targets=[TARGET],
              script=str(AGENTS / script), judge_script=str(judge))
    config = home / "outerloop.toml"
    text = config.read_text().replace(
        'kind = "github"', f'kind = "github"\napi_url = "{fake.base_url}"').replace(
        "max_new_runs_per_tick = 1", "max_new_runs_per_tick = 1\ngrace_minutes = 0")
    config.write_text(starting_jobs(text))
    token = home / "keys" / "forge-token"
    token.write_text(fake.token_for(KERNEL) + "\n")
    os.chmod(token, 0o600)
    return load_settings(home)


def _as(fake: FakeGitHub, login: str) -> Any:
    gh = Github(base_url=fake.base_url, auth=Auth.Token(fake.token_for(login)), retry=None,
                seconds_between_requests=None, seconds_between_writes=None)
    return gh.get_repo(TARGET)


@pytest.fixture
def spy_argv(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Every argv any subprocess of this process was started with."""
    seen: list[list[str]] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        seen.append([str(a) for a in args] if isinstance(args, list | tuple) else [str(args)])
        env = kw.get("env")
        if env:
            seen.append([f"ENV {k}={v}" for k, v in env.items()])
        real(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    yield seen


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle in path.read_bytes():
                    hits.append(path)
            except OSError:
                continue
    return hits


def test_issue_becomes_merged_run_on_github_and_token_leaks_nowhere(
        tmp_path: Path, fake_github: FakeGitHub, spy_argv: list[list[str]]) -> None:
    fake = fake_github
    settings = github_home(tmp_path, fake)
    issue = _as(fake, MAINTAINER).create_issue(
        title="Shorter tours", body="Please try local search on tour.").number

    state = tick_until(settings, in_review, timeout_s=180)
    (run,) = state.runs.values()
    assert run.pr_number is not None and run.issue == issue
    pull = _as(fake, MAINTAINER).get_pull(run.pr_number)
    assert f"Closes #{issue}." in pull.body and pull.user.login == KERNEL
    assert pull.head.ref == f"outerloop/{run.agent}/{run.run_id}"
    claims = [c for c in fake.comments_on(TARGET, issue) if "outerloop:claim" in c["body"]]
    assert len(claims) == 1 and claims[0]["author"] == KERNEL

    pull.create_issue_comment("Does 2-opt keep the runtime small?")
    tick_until(settings, lambda s: any(
        "Thanks for the review" in c["body"]
        for c in fake.comments_on(TARGET, run.pr_number)), timeout_s=180)
    replies = [c for c in fake.comments_on(TARGET, run.pr_number)
               if c["author"] == KERNEL and "outerloop:reply" in c["body"]]
    assert len(replies) == 1

    pull.merge(merge_method="merge")
    state = tick_until(settings, ended, timeout_s=180)
    (run,) = state.runs.values()
    assert run.ending == "merged"
    tick_until(settings, lambda s: any(
        "outerloop:report" in c["body"] for c in fake.comments_on(TARGET, issue)),
        timeout_s=120)
    reports = [c for c in fake.comments_on(TARGET, issue) if "outerloop:report" in c["body"]]
    assert len(reports) == 1 and "merged" in reports[0]["body"]

    tick_until(settings, lambda s: fake.file_at(
        TARGET, "research-log", f"reports/{run.run_id}.md") is not None, timeout_s=60)
    leader = json.loads(fake.file_at(TARGET, "research-log", "results/leader.json") or "{}")
    assert leader["tour"]["best_run"] == run.run_id
    assert run.run_id in (fake.file_at(TARGET, "research-log", "BENCHMARKS.md") or "")

    token = (settings.home / "keys" / "forge-token").read_text().strip()
    assert not [argv for argv in spy_argv if any(token in a for a in argv)]
    assert _files_containing(settings.home / "runs", token.encode()) == []
    assert _files_containing(settings.home / "ledger", token.encode()) == []
    assert _files_containing(settings.home / "jobs", token.encode()) == []
    git_auth = [h for h in fake.auth_headers if h.startswith("Basic ")]
    assert git_auth, "git never talked to the fake over HTTP"
    assert all("x-access-token" not in h for h in git_auth)


def test_blocking_judge_finding_opens_a_real_draft_on_github(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    judge = tmp_path / "judge.yaml"
    judge.write_text(
        "legs:\n  - - write:\n        path: verdict.json\n        content: '{\"verdict\": "
        "\"block\", \"findings\": [{\"severity\": \"blocking\", \"file\": "
        "\"solver/tour.py\", \"line\": 7, \"summary\": \"JUDGE-FOUND: unchecked\"}]}'\n")
    settings = github_home(tmp_path, fake_github, judge=judge)
    _as(fake_github, MAINTAINER).create_issue(title="Shorter tours",
                                              body="Please try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=180)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    pull = _as(fake_github, MAINTAINER).get_pull(run.pr_number)
    assert pull.draft
    assert "- **blocking** from `judge-1` at `solver/tour.py:7`:" in pull.body
    assert "JUDGE-FOUND: unchecked" in pull.body
