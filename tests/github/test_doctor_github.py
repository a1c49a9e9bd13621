"""`outerloop doctor`'s forge checks against the fake GitHub (responses validated
against GitHub's own API description): token valid, login, push permission, and the
token's own write rights."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.config import load_settings
from outerloop.doctor import run_checks
from outerloop.doctor.forge import check_forge
from outerloop.home import init_home
from tests.github.fake import FakeGitHub
from tests.github.fixtures import KERNEL
from tests.support import TARGET


@pytest.fixture
def home(tmp_path: Path, fake_github: FakeGitHub) -> Iterator[Path]:
    root = tmp_path / "home"
    init_home(root, forge="github", compute="local", harness="scripted", targets=[TARGET])
    config = root / "outerloop.toml"
    config.write_text(config.read_text().replace(
        'kind = "github"', f'kind = "github"\napi_url = "{fake_github.base_url}"'))
    token = root / "keys" / "forge-token"
    token.write_text(fake_github.token_for(KERNEL))
    token.chmod(0o600)
    yield root


def forge_lines(root: Path) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.line()) for c in check_forge(load_settings(root))}


def test_doctor_passes_the_forge_when_the_token_is_valid_and_may_push(
        home: Path, fake_github: FakeGitHub) -> None:
    fake_github.grant(TARGET, KERNEL, "write")
    found = forge_lines(home)
    assert [status for status, _ in found.values()] == ["ok", "ok", "ok"]
    assert f"token of {KERNEL}" in found["forge login"][1]
    assert "the token may push, open pull requests and post" in found[f"forge target {TARGET}"][1]
    assert fake_github.repos[TARGET].issues == {}  # the probes wrote nothing


def test_doctor_fails_naming_the_missing_rights_when_the_token_is_read_only(
        home: Path, fake_github: FakeGitHub) -> None:
    """The login may push, its token may not (a fine-grained token with read access):
    the collaborator permission alone passed it (issue 51); GitHub's answers to writes
    it refuses by design tell."""
    fake_github.grant(TARGET, KERNEL, "write")
    (home / "keys" / "forge-token").write_text(fake_github.token_for(KERNEL, read_only=True))
    status, line = forge_lines(home)[f"forge target {TARGET}"]
    assert status == "fail", line
    for right in ("contents: write (push) (HTTP 403)", "pull requests: write (HTTP 403)",
                  "issues: write (HTTP 403)"):
        assert right in line, line
    assert "Contents, Pull requests and Issues" in line
    assert [p.number for p in fake_github.repos[TARGET].pulls.values()] == []
    assert fake_github.repos[TARGET].issues == {}  # the probes wrote nothing


def test_doctor_fails_naming_the_target_when_the_login_cannot_push(
        home: Path, fake_github: FakeGitHub) -> None:
    fake_github.grant(TARGET, KERNEL, "read")
    status, line = forge_lines(home)[f"forge target {TARGET}"]
    assert status == "fail" and "cannot push" in line and "write access" in line


def test_doctor_fails_naming_both_logins_when_the_token_is_someone_elses(
        home: Path, fake_github: FakeGitHub) -> None:
    config = home / "outerloop.toml"
    config.write_text(config.read_text().replace('login = "outerloop"',
                                                 'login = "someone-else"'))
    status, line = forge_lines(home)["forge login"]
    assert status == "fail" and "'outerloop'" in line and "'someone-else'" in line
    assert '-> fix: set [forge] login = "outerloop"' in line


def test_doctor_fails_the_forge_when_the_token_is_not_valid(
        home: Path, fake_github: FakeGitHub) -> None:
    (home / "keys" / "forge-token").write_text("not-a-token")
    results = [c for c in run_checks(load_settings(home), [check_forge])]
    (bad,) = [c for c in results if c.status == "fail"]
    assert bad.name == "forge token valid" and "401" in bad.detail
