"""What the tick's forge pass costs on GitHub (the fake, responses validated): the ETag
cache outlives the deletable ``cache/``, and targets are observed at once, in a bounded
pool, their results in config order and their errors their own.
(``bench/forge_calls.py`` prints the figures.)"""

from __future__ import annotations

import json
import os
import shutil
import threading
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
from outerloop.ledger.state import State
from tests.github.fake import FakeGitHub
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


def _pass(settings: Settings, **kwargs: int) -> Observations:
    obs = Observations(now=clock.now())
    observe_forge(State(), Effects(settings), obs, **kwargs)
    return obs


def _ideas(fake: FakeGitHub, repo: str, count: int) -> None:
    gh = Github(base_url=fake.base_url, auth=Auth.Token(fake.token_for(MAINTAINER)),
                retry=None, seconds_between_requests=None, seconds_between_writes=None)
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
