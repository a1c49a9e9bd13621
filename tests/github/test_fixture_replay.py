"""The GitHub forge against real recorded bytes from ``@octokit/fixtures``: pagination
by ``Link`` headers (including a rewrite to ``/repositories/<id>`` URLs), a label
request, and GitHub's 422 body turned into a ``ForgeError`` carrying its words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from github import Auth

from outerloop.errors import ForgeError
from outerloop.forge import githubhttp as http
from outerloop.forge.github import GitHubForge
from tests.github.replay import Replay

pytestmark = pytest.mark.github


@pytest.fixture
def replay(request: pytest.FixtureRequest) -> Iterator[Replay]:
    server = Replay(request.param)
    try:
        yield server
    finally:
        server.stop()
    assert server.mismatches == []


def _forge(replay: Replay, tmp_path: Path) -> GitHubForge:
    token = Auth.Token("0" * 39 + "1")
    return GitHubForge(replay.base_url, "outerloop", token,
                       cache_dir=tmp_path / "cache", seconds_between_writes=None,
                       retry=http.ForgeRetry(backoff_factor=0, total=1))


@pytest.mark.parametrize("replay", ["paginate-issues"], indirect=True)
def test_every_page_is_read_when_link_headers_point_to_next(replay: Replay,
                                                            tmp_path: Path) -> None:
    forge = _forge(replay, tmp_path)
    items = forge._pages("listing issues", "/repos/octokit-fixture-org/paginate-issues/issues",
                         {"per_page": 3})
    assert [i["number"] for i in items] == list(range(13, 0, -1))
    assert replay.position == len(replay.entries)
    assert [forge._issue(i).number for i in items][:2] == [13, 12]


@pytest.mark.parametrize("replay", ["add-labels-to-issue"], indirect=True)
def test_created_issue_parses_when_bytes_are_real(replay: Replay, tmp_path: Path) -> None:
    forge = _forge(replay, tmp_path)
    issue = forge.create_issue("octokit-fixture-org/add-labels-to-issue",
                               "Issue without a label", "")
    assert issue.number == 1 and issue.title == "Issue without a label"
    assert replay.position == 1


@pytest.mark.parametrize("replay", ["errors"], indirect=True)
def test_validation_failure_becomes_forge_error_with_githubs_words(replay: Replay,
                                                                   tmp_path: Path) -> None:
    forge = _forge(replay, tmp_path)
    with pytest.raises(ForgeError, match="422 Validation Failed") as caught, \
            http.translate("creating a label"):
        forge.gh.requester.requestJsonAndCheck(
            "POST", "/repos/octokit-fixture-org/errors/labels",
            input={"name": "foo", "color": "invalid"})
    assert "color" in str(caught.value)
