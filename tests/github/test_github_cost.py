"""What the tick's forge pass costs on GitHub (the fake, responses validated): the ETag
cache outlives the deletable ``cache/``, and targets are observed at once, in a bounded
pool, their results in config order and their errors their own.
(``bench/forge_calls.py`` prints the figures.)"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from outerloop import clock
from outerloop.config import Settings, load_settings
from outerloop.home import init_home
from outerloop.kernel.executor import Effects
from outerloop.kernel.observations import Observations
from outerloop.kernel.observe import observe_forge
from outerloop.ledger.state import RunRecord, State
from tests.github.fake import FakeGitHub, _git, _stamp
from tests.github.fixtures import KERNEL, MAINTAINER, kernel_forge
from tests.support import EXAMPLE_TARGET, TARGET

pytestmark = pytest.mark.github


def _home(tmp_path: Path, fake: FakeGitHub, targets: list[str]) -> Settings:
    home = tmp_path / "home"
    init_home(home, forge="github", compute="local", harness="scripted", targets=targets)
    config = home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        'kind = "github"', f'kind = "github"\napi_url = "{fake.base_url}"'))
    token = home / "keys" / "forge-token"
    token.write_text(fake.token_for(KERNEL))
    os.chmod(token, 0o600)
    return load_settings(home)


def _pass(settings: Settings, state: State | None = None, **kwargs: int) -> Observations:
    obs = Observations(now=clock.now())
    observe_forge(state or State(), Effects(settings), obs, **kwargs)
    return obs


def _asked(fake: FakeGitHub, settings: Settings, state: State) -> list[str]:
    """The paths one forge pass sent to GitHub (the free ``/rate_limit`` left out)."""
    sent = len(fake.log)
    seen = _pass(settings, state).targets[TARGET]
    assert seen.error is None
    return sorted(path for _, path, _ in fake.log[sent:] if path != "/rate_limit")


def _quiet_for_an_hour(fake: FakeGitHub) -> None:
    with fake.lock:
        for issue in fake.repos[TARGET].issues.values():
            issue["updated_at"] = _stamp(time.time() - 3600)


def _pr_in_review(fake: FakeGitHub) -> State:
    """An open PR (a branch made in the bare repo, the PR opened through the API) that
    a run is reviewing."""
    bare = fake.repos[TARGET].bare
    sha = _git(["-c", "user.name=a", "-c", "user.email=a@example.com", "commit-tree",
                _git(["rev-parse", "main^{tree}"], cwd=bare), "-p", "main", "-m", "pr"],
               cwd=bare)
    _git(["update-ref", "refs/heads/outerloop/agent-01/run-1", sha], cwd=bare)
    pr = _human(fake).get_repo(TARGET).create_pull(
        title="[agent-01] run 1", body="b", head="outerloop/agent-01/run-1", base="main")
    state = State()
    state.runs["run-1"] = RunRecord(
        run_id="run-1", target=TARGET, benchmark="tour", agent="agent-01", issue=None,
        issue_title="", hypothesis="", queued_at="", state="parked", park_reason="review",
        pr_number=pr.number, last_activity_at="2026-01-01T00:00:00.000000Z")
    return state


def _human(fake: FakeGitHub) -> Any:
    return Github(base_url=fake.base_url, auth=Auth.Token(fake.token_for(MAINTAINER)),
                  retry=None, seconds_between_requests=None, seconds_between_writes=None)


def _ideas(fake: FakeGitHub, repo: str, count: int) -> None:
    gh = _human(fake)
    for i in range(count):
        issue = gh.get_repo(repo).create_issue(title=f"idea {i}", body="faster tour")
        if i == 0:
            issue.add_to_labels("outerloop:approved")


def test_deleting_cache_dir_keeps_conditional_requests_free(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    _ideas(fake_github, TARGET, 3)
    settings = _home(tmp_path, fake_github, [TARGET])
    assert _pass(settings).targets[TARGET].error is None
    shutil.rmtree(settings.home / "cache")  # documented as deletable: the fold cache
    (settings.home / "cache").mkdir(mode=0o700)
    before, sent = fake_github.costly_requests(), len(fake_github.log)
    seen = _pass(settings).targets[TARGET]
    assert seen.error is None and len(seen.issues) == 3
    assert len(fake_github.log) > sent  # it did ask GitHub
    assert fake_github.costly_requests() == before  # every answer a free 304


def test_targets_are_observed_at_once_in_a_bounded_pool_in_config_order(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    targets = [TARGET] + [f"demo/other-{i}" for i in range(4)]
    for repo in targets[1:]:
        fake_github.create_repo(repo, EXAMPLE_TARGET)
        fake_github.grant(repo, MAINTAINER, "admin")
    for i, repo in enumerate(targets):  # counts that differ: a swapped answer shows
        _ideas(fake_github, repo, 1 + i)
    settings = _home(tmp_path, fake_github, targets)
    fake_github.fail("GET", f"^/repos/{targets[-1]}/issues$", 422, times=1,
                     body={"message": "Validation Failed",
                           "documentation_url": "https://docs.github.com/rest"})
    fake_github.latency_s = 0.05
    obs = _pass(settings, workers=3)
    assert 1 < fake_github.max_in_flight <= 3
    assert list(obs.targets) == targets
    assert [len(obs.targets[r].issues) for r in targets] == [1, 2, 3, 4, 0]
    assert [obs.targets[r].error is None for r in targets] == [True] * 4 + [False]
    assert "422" in str(obs.targets[targets[-1]].error)


def test_threads_sharing_the_forge_keep_their_own_request_on_its_one_connection(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    """PyGithub keeps a call's verb and URL on its one connection object between
    ``request`` and ``getresponse``: a second thread's call in between must not swap
    the first one's answer."""
    forge = kernel_forge(fake_github, tmp_path)
    connection = forge.gh.requester._Requester__createConnection()
    headers = {"Authorization": f"token {fake_github.token_for(KERNEL)}"}
    asked, second_asked = threading.Event(), threading.Event()
    answers: dict[str, Any] = {}

    def first() -> None:
        connection.request("GET", f"/repos/{TARGET}", None, headers)
        asked.set()
        second_asked.wait(10)
        answers["first"] = json.loads(connection.getresponse().read())

    def second() -> None:
        asked.wait(10)
        connection.request("GET", "/rate_limit", None, headers)
        second_asked.set()
        answers["second"] = json.loads(connection.getresponse().read())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert answers["first"].get("full_name") == TARGET
    assert "resources" in answers["second"]


def test_quiet_tick_asks_per_target_not_per_issue_and_a_change_is_fetched(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    _ideas(fake_github, TARGET, 3)
    state = _pr_in_review(fake_github)
    settings = _home(tmp_path, fake_github, [TARGET])
    target = f"/repos/{TARGET}"
    per_target = sorted([target, f"{target}/git/ref/heads/main", f"{target}/issues"])
    _asked(fake_github, settings, state)
    fresh = _asked(fake_github, settings, state)  # changed a moment ago: asked again
    assert f"{target}/issues/1/timeline" in fresh and f"{target}/pulls/4" in fresh
    _quiet_for_an_hour(fake_github)
    _asked(fake_github, settings, state)
    assert _asked(fake_github, settings, state) == per_target
    _human(fake_github).get_repo(TARGET).get_issue(4).create_comment("please rerun")
    assert f"{target}/issues/4/comments" in _asked(fake_github, settings, state)
    _quiet_for_an_hour(fake_github)
    _asked(fake_github, settings, state)
    assert _asked(fake_github, settings, state) == per_target
    seen = _pass(settings, state).targets[TARGET]
    assert [c.body for c in seen.pulls[4].comments] == ["please rerun"]
    assert [e.label for e in seen.label_events[1]] == ["outerloop:approved"]


def test_the_forge_reads_its_own_write_to_an_unchanged_issue(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    _ideas(fake_github, TARGET, 1)
    _quiet_for_an_hour(fake_github)
    forge = kernel_forge(fake_github, tmp_path)
    forge.list_issues(TARGET)
    assert forge.list_comments(TARGET, 1) == []
    assert forge.list_comments(TARGET, 1) == [] and forge.counters.unchanged == 1
    forge.post_comment(TARGET, 1, "claimed")
    assert [c.body for c in forge.list_comments(TARGET, 1)] == ["claimed"]
