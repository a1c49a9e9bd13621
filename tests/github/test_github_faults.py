"""The GitHub forge when GitHub misbehaves: 5xx, dropped connections, rate limits,
a spent budget; plus what the response check and the ETag cache promise."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from outerloop.errors import ForgeError, ForgeUnavailable
from outerloop.forge import githubhttp as http
from outerloop.forge.markers import with_marker
from outerloop.kernel.tick import run_tick
from tests.e2e.test_github_research_run import github_home
from tests.github.fake import FakeGitHub
from tests.github.fixtures import KERNEL, kernel_forge
from tests.support import TARGET

pytestmark = pytest.mark.github
COMMENTS = r"/issues/\d+/comments$"
PRIMARY = {"message": "API rate limit exceeded for user ID 1.",
           "documentation_url": "https://docs.github.com/rest"}
SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes "
                        "before you try again.",
             "documentation_url": "https://docs.github.com/rest"}


def _issue(fake: FakeGitHub, tmp_path: Path) -> int:
    return kernel_forge(fake, tmp_path / "setup").create_issue(TARGET, "t", "b").number


def _kernel_comments(fake: FakeGitHub, number: int) -> list[str]:
    return [c["body"] for c in fake.comments_on(TARGET, number) if c["author"] == KERNEL]


def test_response_check_reports_a_wrong_shape_when_fake_drops_a_required_field(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    def drop_number(method: str, path: str, payload: object) -> object:
        if isinstance(payload, dict) and "/issues/" in path:
            payload = {k: v for k, v in payload.items() if k != "number"}
        return payload

    number = _issue(fake_github, tmp_path)
    fake_github.mutate = drop_number
    forge = kernel_forge(fake_github, tmp_path)
    with pytest.raises(KeyError):
        forge.get_issue(TARGET, number)
    assert any("'number' is a required property" in v for v in fake_github.violations)
    fake_github.violations.clear()


def test_comment_post_answered_5xx_after_it_happened_yields_one_comment(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    number = _issue(fake_github, tmp_path)
    fake_github.fail("POST", COMMENTS, 502, after_effect=True)
    forge = kernel_forge(fake_github, tmp_path)
    body = with_marker("claimed", "claim", "run-1")
    posted = forge.post_comment(TARGET, number, body)
    assert _kernel_comments(fake_github, number) == [body]
    assert forge.post_comment(TARGET, number, body).id == posted.id
    assert _kernel_comments(fake_github, number) == [body]


def test_comment_post_is_deferred_not_retried_when_5xx_came_before_the_effect(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    number = _issue(fake_github, tmp_path)
    fake_github.fail("POST", COMMENTS, 503, times=1)
    forge = kernel_forge(fake_github, tmp_path)
    body = with_marker("report", "report", "run-1")
    with pytest.raises(ForgeUnavailable):
        forge.post_comment(TARGET, number, body)
    assert _kernel_comments(fake_github, number) == []
    assert [m for m, p, _ in fake_github.log if m == "POST" and p.endswith("/comments")] == [
        "POST"]
    forge.post_comment(TARGET, number, body)
    assert _kernel_comments(fake_github, number) == [body]


def test_pull_request_answered_5xx_after_it_opened_is_found_by_head(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    forge = kernel_forge(fake_github, tmp_path)
    clone = tmp_path / "clone"
    base = forge.fetch(TARGET, clone, "main")
    forge.push(TARGET, clone, base, "feature")
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=a", "-c", "user.email=a@b",
                    "commit", "--allow-empty", "-qm", "x"], check=True)
    sha = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True,
                         text=True, check=True).stdout.strip()
    forge.push(TARGET, clone, sha, "feature")
    fake_github.fail("POST", r"/pulls$", 502, after_effect=True)
    pr = forge.open_pr(TARGET, "feature", "main", "t", "b")
    assert pr.head == "feature" and len(fake_github.repos[TARGET].pulls) == 1


def test_read_recovers_when_server_answers_5xx_then_succeeds(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    _issue(fake_github, tmp_path)
    fake_github.fail("GET", r"/issues$", 502, times=2)
    issues = kernel_forge(fake_github, tmp_path).list_issues(TARGET)
    assert [i.title for i in issues] == ["t"]


def test_exhausted_retries_become_forge_unavailable_not_retry_error(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    fake_github.fail("GET", r"/issues$", 500, times=10)
    with pytest.raises(ForgeUnavailable, match="retries exhausted"):
        kernel_forge(fake_github, tmp_path).list_issues(TARGET)


def test_dropped_connection_becomes_forge_unavailable(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    number = _issue(fake_github, tmp_path)
    fake_github.fail("POST", COMMENTS, 0, times=2, drop=True)
    with pytest.raises(ForgeUnavailable):
        kernel_forge(fake_github, tmp_path).post_comment(TARGET, number, "hello")
    assert _kernel_comments(fake_github, number) == []


def test_primary_rate_limit_is_waited_out_when_reset_is_near(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    reset = str(int(time.time()) + 1)
    fake_github.fail("GET", r"/issues$", 403, body=PRIMARY,
                     headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})
    started = time.monotonic()
    assert kernel_forge(fake_github, tmp_path).list_issues(TARGET) == []
    assert time.monotonic() - started >= 0.5


def test_secondary_rate_limit_honours_retry_after(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    number = _issue(fake_github, tmp_path)
    fake_github.fail("POST", COMMENTS, 403, body=SECONDARY, headers={"Retry-After": "1"})
    started = time.monotonic()
    kernel_forge(fake_github, tmp_path).post_comment(TARGET, number, "after the wait")
    assert time.monotonic() - started >= 0.9
    assert _kernel_comments(fake_github, number) == ["after the wait"]


def test_rate_limit_beyond_the_wait_cap_defers_the_tick(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    reset = str(int(time.time()) + 3600)
    fake_github.fail("GET", r"/issues$", 403, body=PRIMARY,
                     headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})
    forge = kernel_forge(fake_github, tmp_path,
                         retry=http.ForgeRetry(backoff_factor=0, max_rate_limit_wait=5))
    with pytest.raises(http.RateLimited, match="rate limit"):
        forge.list_issues(TARGET)


def test_forge_work_stops_when_budget_is_below_min_rate_remaining(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    fake_github.remaining = 150
    forge = kernel_forge(fake_github, tmp_path, min_rate_remaining=200)
    with pytest.raises(ForgeUnavailable, match="min_rate_remaining 200"):
        forge.default_branch(TARGET)
    assert [p for _, p, _ in fake_github.log] == ["/rate_limit"]


def test_unchanged_reads_cost_no_rate_limit_when_repeated_next_tick(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    _issue(fake_github, tmp_path)
    first = kernel_forge(fake_github, tmp_path)
    head = first.branch_head(TARGET, "main")
    assert head is not None
    first.list_issues(TARGET)
    first.read_file(TARGET, ".outerloop.yaml", head)
    spent = fake_github.costly_requests()
    second = kernel_forge(fake_github, tmp_path)
    assert second.branch_head(TARGET, "main") == head
    assert [i.title for i in second.list_issues(TARGET)] == ["t"]
    assert second.read_file(TARGET, ".outerloop.yaml", head) is not None
    assert fake_github.costly_requests() == spent
    assert second.counters.costly == 0 and second.counters.not_modified == 2
    assert second.counters.served_from_cache == 1


def test_tick_defers_and_says_why_when_github_keeps_failing(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    settings = github_home(tmp_path, fake_github)
    fake_github.fail("GET", r"^/repos/", 502, times=1000)
    report = run_tick(settings)
    assert report.acted and report.failures == []
    assert any("GitHub" in note for note in report.notes)


def test_token_reaches_git_only_through_the_environment(
        fake_github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], dict[str, str]]] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[bytes], args: list[str], *rest: object, **kw: object) -> None:
        seen.append((list(args), dict(kw.get("env") or {})))  # type: ignore[call-overload]
        real(self, args, *rest, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    forge = kernel_forge(fake_github, tmp_path)
    token = forge.auth.token
    clone = tmp_path / "clone"
    forge.fetch(TARGET, clone, "main")
    assert seen and all(token not in " ".join(argv) for argv, _ in seen)
    header = next(v for _, env in seen for k, v in env.items() if k.startswith("GIT_CONFIG_VALUE")
                  and v.startswith("Authorization"))
    assert base64.b64decode(header.split()[-1]).decode() == f"x-access-token:{token}"
    for path in clone.joinpath(".git").rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes()
    assert "127.0.0.1" in (clone / ".git" / "config").read_text()


def test_app_installation_token_is_minted_and_refreshed_before_expiry(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from outerloop.forge.github import GitHubForge, load_auth

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    fake_github.add_app_installation(42, "outerloop-app[bot]", ttl_s=3600)
    secrets: list[str] = []
    auth = load_auth(json.dumps({"app_id": 7, "installation_id": 42, "private_key": pem}),
                     secrets.append)
    forge = GitHubForge(fake_github.base_url, "outerloop-app[bot]", auth,
                        cache_dir=tmp_path / "c", seconds_between_writes=None, secrets=secrets)
    assert forge.default_branch(TARGET) == "main"
    forge.fetch(TARGET, tmp_path / "clone", "main")
    assert len(fake_github.minted) == 1 and fake_github.minted[0][0] in secrets
    fake_github.app_installations[42] = ("outerloop-app[bot]", 60)
    auth._current = None  # type: ignore[attr-defined]
    forge.list_issues(TARGET)
    forge.list_issues(TARGET)
    assert len(fake_github.minted) >= 3, "a token expiring within the margin is replaced"
    assert all(token in secrets for token, _ in fake_github.minted)


def test_plain_http_token_is_refused_for_a_non_loopback_host() -> None:
    from outerloop.forge.githubgit import GitRemote

    with pytest.raises(ForgeError, match="plain http"):
        GitRemote("http://example.com/o/r.git", lambda: "t", "outerloop")
    assert os.environ.get("GIT_CONFIG_COUNT") is None
