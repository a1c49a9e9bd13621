"""What the tick's forge pass costs on GitHub (the fake, responses validated): the ETag
cache outlives the deletable ``cache/``, and targets are observed at once, in a bounded
pool, their results in config order and their errors their own.
(``bench/forge_calls.py`` prints the figures.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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
from tests.github.fixtures import KERNEL, MAINTAINER
from tests.support import TARGET

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

