"""The forge contract, run against both forges from one suite: the local forge and the
GitHub forge (real PyGithub against the fake GitHub, every response checked against
GitHub's official description). Humans act through each forge's own channel: the
local forge's ``*_as`` methods, or PyGithub with the human's own token."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest
from github import Auth, Github

from outerloop.config import load_settings
from outerloop.errors import ForgeError
from outerloop.forge.base import Association, Forge
from outerloop.forge.local import LocalForge
from outerloop.forge.markers import find_marker, trusted_markers, with_marker
from outerloop.forge.standing import approved_by_writer, issue_has_standing
from outerloop.home import init_home
from outerloop.kernel import actions as act
from outerloop.kernel.executor import Effects, comment_body
from tests.github.fake import FakeGitHub
from tests.github.fixtures import KERNEL, MAINTAINER, finish, kernel_forge
from tests.support import EXAMPLE_TARGET, TARGET

OUTSIDER = "mallory"
APPROVED = "outerloop:approved"


class Humans(Protocol):
    def open_issue(self, login: str, title: str, body: str) -> int: ...
    def comment(self, login: str, number: int, body: str) -> None: ...
    def label(self, login: str, number: int, label: str) -> None: ...
    def close(self, login: str, number: int) -> None: ...
    def review(self, login: str, number: int, body: str,
               comments: list[tuple[str, int, str]]) -> None: ...
    def merge(self, login: str, number: int) -> None: ...


class LocalHumans:
    def __init__(self, forge: LocalForge) -> None:
        self.forge = forge

    def open_issue(self, login: str, title: str, body: str) -> int:
        return self.forge.open_issue_as(TARGET, title, body, login).number

    def comment(self, login: str, number: int, body: str) -> None:
        self.forge.comment_as(TARGET, number, body, login)

    def label(self, login: str, number: int, label: str) -> None:
        self.forge.label_as(TARGET, number, label, login)

    def review(self, login: str, number: int, body: str,
               comments: list[tuple[str, int, str]]) -> None:
        self.forge.review_as(TARGET, number, body, login, comments=list(comments))

    def merge(self, login: str, number: int) -> None:
        self.forge.merge_pr(TARGET, number, as_user=login)

    def close(self, login: str, number: int) -> None:
        self.forge.close_pr_as(TARGET, number, login)


class GitHubHumans:
    """Humans on the fake through PyGithub's public API, each with their own token."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake

    def _repo(self, login: str) -> Any:
        gh = Github(base_url=self.fake.base_url, auth=Auth.Token(self.fake.token_for(login)),
                    retry=None, seconds_between_requests=None, seconds_between_writes=None)
        return gh.get_repo(TARGET)

    def open_issue(self, login: str, title: str, body: str) -> int:
        return int(self._repo(login).create_issue(title=title, body=body).number)

    def comment(self, login: str, number: int, body: str) -> None:
        self._repo(login).get_issue(number).create_comment(body)

    def label(self, login: str, number: int, label: str) -> None:
        self._repo(login).get_issue(number).add_to_labels(label)

    def review(self, login: str, number: int, body: str,
               comments: list[tuple[str, int, str]]) -> None:
        self._repo(login).get_pull(number).create_review(
            body=body, event="COMMENT",
            comments=[{"path": p, "line": n, "body": b} for p, n, b in comments])

    def merge(self, login: str, number: int) -> None:
        self._repo(login).get_pull(number).merge(merge_method="merge")

    def close(self, login: str, number: int) -> None:
        self._repo(login).get_pull(number).edit(state="closed")


@dataclass
class Env:
    kind: str
    forge: Forge
    humans: Humans
    tmp: Path
    fake: FakeGitHub | None = None


@pytest.fixture(params=["local", "github"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    if request.param == "local":
        local = LocalForge(tmp_path / "forge", KERNEL)
        local.import_repo(EXAMPLE_TARGET, TARGET, as_user="demo")
        local.set_role(MAINTAINER, "collaborator")
        yield Env("local", local, LocalHumans(local), tmp_path)
        return
    fake = FakeGitHub(tmp_path / "fake-github").start()
    fake.create_repo(TARGET, EXAMPLE_TARGET)
    fake.grant(TARGET, MAINTAINER, "write")
    fake.grant(TARGET, KERNEL, "write")
    try:
        yield Env("github", kernel_forge(fake, tmp_path), GitHubHumans(fake), tmp_path, fake)
    finally:
        fake.stop()
    finish(fake)


pytestmark = pytest.mark.github


def _commit(repo: Path, message: str) -> str:
    ident = ["-c", "user.name=a", "-c", "user.email=a@example.com"]
    subprocess.run(["git", *ident, "-C", str(repo), "commit", "--allow-empty", "-qm", message],
                   check=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def _pushed_branch(env: Env, branch: str) -> str:
    clone = env.tmp / f"clone-{branch.replace('/', '-')}"
    env.forge.fetch(TARGET, clone, "main")
    sha = _commit(clone, f"work on {branch}")
    env.forge.push(TARGET, clone, sha, branch)
    return sha


def test_default_branch_and_files_read_at_a_ref_when_repository_exists(env: Env) -> None:
    branch = env.forge.default_branch(TARGET)
    head = env.forge.branch_head(TARGET, branch)
    assert branch == "main" and head is not None and len(head) == 40
    contract = env.forge.read_file(TARGET, ".outerloop.yaml", head)
    assert contract is not None and b"benchmarks" in contract
    assert env.forge.read_file(TARGET, "no/such/file", head) is None
    assert env.forge.branch_head(TARGET, "no-such-branch") is None


def test_fetch_clones_at_ref_and_push_moves_branch_forward_only(env: Env) -> None:
    clone = env.tmp / "clone"
    base = env.forge.fetch(TARGET, clone, "main")
    assert base == env.forge.branch_head(TARGET, "main")
    first = _commit(clone, "one")
    env.forge.push(TARGET, clone, first, "outerloop/agent-01/run")
    env.forge.push(TARGET, clone, first, "outerloop/agent-01/run")
    assert env.forge.branch_head(TARGET, "outerloop/agent-01/run") == first
    other = env.tmp / "other"
    env.forge.fetch(TARGET, other, "main")
    rival = _commit(other, "rival")
    with pytest.raises(ForgeError):
        env.forge.push(TARGET, other, rival, "outerloop/agent-01/run")
    assert env.forge.branch_head(TARGET, "outerloop/agent-01/run") == first


def test_commit_files_writes_one_commit_when_head_is_as_expected(env: Env) -> None:
    first = env.forge.commit_files(TARGET, "research-log", {"results/leader.json": b"{}\n"},
                                   "record", None)
    second = env.forge.commit_files(TARGET, "research-log", {"BENCHMARKS.md": b"# b\n"},
                                    "record", first)
    assert env.forge.branch_head(TARGET, "research-log") == second
    assert env.forge.read_file(TARGET, "results/leader.json", second) == b"{}\n"
    assert env.forge.read_file(TARGET, "BENCHMARKS.md", second) == b"# b\n"


def test_commit_files_is_refused_when_branch_head_moved(env: Env) -> None:
    first = env.forge.commit_files(TARGET, "research-log", {"a.md": b"1"}, "record", None)
    env.forge.commit_files(TARGET, "research-log", {"a.md": b"2"}, "record", first)
    with pytest.raises(ForgeError, match="moved"):
        env.forge.commit_files(TARGET, "research-log", {"a.md": b"3"}, "record", first)
    with pytest.raises(ForgeError, match="moved"):
        env.forge.commit_files(TARGET, "research-log", {"a.md": b"3"}, "record", None)


def test_issues_list_open_oldest_first_without_pull_requests(env: Env) -> None:
    one = env.humans.open_issue(MAINTAINER, "first", "body one")
    two = env.humans.open_issue(OUTSIDER, "second", "body two")
    _pushed_branch(env, "feature")
    env.forge.open_pr(TARGET, "feature", "main", "a PR", "text")
    issues = env.forge.list_issues(TARGET)
    assert [i.number for i in issues] == [one, two]
    assert issues[0].author == MAINTAINER and issues[0].body == "body one"
    env.forge.close_issue(TARGET, one)
    assert [i.number for i in env.forge.list_issues(TARGET)] == [two]
    assert env.forge.get_issue(TARGET, one).state == "closed"


def test_kernel_created_issue_is_authored_by_kernel(env: Env) -> None:
    issue = env.forge.create_issue(TARGET, "alarm", "the contract is broken")
    assert issue.author == KERNEL and issue.state == "open"
    assert env.forge.get_issue(TARGET, issue.number).title == "alarm"


def test_comments_carry_author_and_association_and_filter_by_since(env: Env) -> None:
    number = env.humans.open_issue(MAINTAINER, "t", "b")
    env.humans.comment(MAINTAINER, number, "from a collaborator")
    env.humans.comment(OUTSIDER, number, "from an outsider")
    posted = env.forge.post_comment(TARGET, number, "from the kernel")
    comments = env.forge.list_comments(TARGET, number)
    assert [(c.author, c.body) for c in comments] == [
        (MAINTAINER, "from a collaborator"), (OUTSIDER, "from an outsider"),
        (KERNEL, "from the kernel")]
    assert comments[0].author_association in (Association.COLLABORATOR, Association.OWNER)
    assert comments[1].author_association == Association.NONE
    assert comments[-1].id == posted.id
    later = env.forge.list_comments(TARGET, number, since=datetime.now(UTC) + timedelta(hours=1))
    assert later == []


def test_forged_marker_by_another_user_is_data_when_kernel_looks_it_up(env: Env) -> None:
    number = env.humans.open_issue(MAINTAINER, "t", "b")
    env.humans.comment(OUTSIDER, number, with_marker("I claim this", "claim", "run-1"))
    comments = env.forge.list_comments(TARGET, number)
    assert find_marker(comments, "claim", "run-1", KERNEL) is None
    env.forge.post_comment(TARGET, number, with_marker("claimed", "claim", "run-1"))
    comments = env.forge.list_comments(TARGET, number)
    found = find_marker(comments, "claim", "run-1", KERNEL)
    assert found is not None and found.author == KERNEL
    assert len(trusted_markers(comments, KERNEL)) == 1


def test_label_counts_only_when_applied_by_a_writer(env: Env) -> None:
    outsider_issue = env.humans.open_issue(OUTSIDER, "please", "improve tour")
    env.humans.label(OUTSIDER, outsider_issue, APPROVED)
    issue = env.forge.get_issue(TARGET, outsider_issue)
    events = env.forge.label_events(TARGET, outsider_issue)
    assert APPROVED in issue.labels and [e.actor for e in events] == [OUTSIDER]
    assert not events[0].actor_can_write
    assert not issue_has_standing(issue, events)

    approved = env.humans.open_issue(OUTSIDER, "please too", "improve tour")
    env.humans.label(MAINTAINER, approved, APPROVED)
    issue = env.forge.get_issue(TARGET, approved)
    events = env.forge.label_events(TARGET, approved)
    assert events[0].actor == MAINTAINER and events[0].actor_can_write
    assert approved_by_writer(issue, events)


def test_pull_request_lifecycle_open_find_update_review_merge(env: Env) -> None:
    sha = _pushed_branch(env, "outerloop/agent-01/run-1")
    pr = env.forge.open_pr(TARGET, "outerloop/agent-01/run-1", "main", "title", "body",
                           draft=False)
    assert pr.head_sha == sha and pr.state == "open" and pr.author == KERNEL
    found = env.forge.find_open_pr(TARGET, "outerloop/agent-01/run-1")
    assert found is not None and found.number == pr.number
    assert env.forge.find_open_pr(TARGET, "other-branch") is None
    with pytest.raises(ForgeError):
        env.forge.open_pr(TARGET, "outerloop/agent-01/run-1", "main", "again", "body")
    assert env.forge.update_pr(TARGET, pr.number, body="new body").body == "new body"

    env.humans.review(MAINTAINER, pr.number, "looks fine", [("tour.py", 1, "why here?")])
    (review,) = env.forge.list_reviews(TARGET, pr.number)
    assert review.author == MAINTAINER and review.state == "COMMENTED"
    (line,) = env.forge.list_review_comments(TARGET, pr.number)
    assert (line.path, line.line, line.body) == ("tour.py", 1, "why here?")
    assert env.forge.list_review_comments(
        TARGET, pr.number, since=datetime.now(UTC) + timedelta(hours=1)) == []

    env.humans.merge(MAINTAINER, pr.number)
    merged = env.forge.get_pr(TARGET, pr.number)
    assert merged.merged and merged.state == "closed"
    assert env.forge.find_open_pr(TARGET, "outerloop/agent-01/run-1") is None
    (kept,) = env.forge.find_prs(TARGET, "outerloop/agent-01/run-1")
    assert (kept.number, kept.head_sha, kept.merged) == (pr.number, sha, True)
    assert env.forge.find_prs(TARGET, "other-branch") == []


def test_merge_into_the_default_branch_closes_the_issues_the_body_closes(env: Env) -> None:
    """GitHub's closing keywords: ``Closes #N`` closes N when the PR merges into the
    default branch; ``Addresses #M`` leaves M open (the PR body's choice,
    ``[[targets]] close_issue``)."""
    closes = env.humans.open_issue(MAINTAINER, "Shorter tours", "please")
    stays = env.humans.open_issue(MAINTAINER, "Faster tours", "please")
    _pushed_branch(env, "outerloop/agent-01/run-2")
    pr = env.forge.open_pr(TARGET, "outerloop/agent-01/run-2", "main", "t",
                           f"Closes #{closes}.\n\nAddresses #{stays}.", draft=False)
    assert env.forge.get_issue(TARGET, closes).state == "open"
    env.humans.merge(MAINTAINER, pr.number)
    assert env.forge.get_issue(TARGET, closes).state == "closed"
    assert env.forge.get_issue(TARGET, stays).state == "open"


def test_closed_pull_request_reads_closed_and_not_merged(env: Env) -> None:
    _pushed_branch(env, "to-close")
    pr = env.forge.open_pr(TARGET, "to-close", "main", "t", "b")
    env.humans.close(MAINTAINER, pr.number)
    closed = env.forge.get_pr(TARGET, pr.number)
    assert closed.state == "closed" and not closed.merged


def test_kernel_closes_its_pull_request_and_finds_it_closed_when_reconciled(
        env: Env) -> None:
    from outerloop.kernel.executor import find, perform

    _pushed_branch(env, "to-withdraw")
    pr = env.forge.open_pr(TARGET, "to-withdraw", "main", "t", "b")
    action = act.CloseIssue(target=TARGET, number=pr.number, why="withdrawn", pull=True)
    fx = _effects(env)
    assert find(action, fx) is None  # still open: the reconcile performs it
    done = perform(action, fx)
    closed = env.forge.get_pr(TARGET, pr.number)
    assert closed.state == "closed" and not closed.merged
    assert find(action, fx) == done
    assert perform(action, fx) == done  # closing a closed one changes nothing


def _effects(env: Env) -> Effects:
    home = env.tmp / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=[TARGET])
    return Effects(load_settings(home), _forge=env.forge)


def test_comment_is_not_posted_again_when_reconciled_after_its_effect(env: Env) -> None:
    from outerloop.kernel.executor import find, perform

    number = env.humans.open_issue(MAINTAINER, "t", "b")
    action = act.PostComment(target=TARGET, number=number, body="claimed",
                             marker_kind="claim", marker_key="run-9")
    fx = _effects(env)
    done = perform(action, fx)
    found = find(action, fx)
    assert found == done
    kernel_posts = [c for c in env.forge.list_comments(TARGET, number) if c.author == KERNEL]
    assert [c.body for c in kernel_posts] == [comment_body(action)]


def test_a_kept_comment_is_posted_once_then_edited_and_a_retry_changes_nothing(
        env: Env) -> None:
    from outerloop.errors import ForgeError, OuterloopError
    from outerloop.kernel.executor import find, perform

    number = env.humans.open_issue(MAINTAINER, "t", "b")
    env.humans.comment(OUTSIDER, number, with_marker("forged", "width", "width-1"))
    first = act.EditComment(target=TARGET, number=number, body="runs: one",
                            marker_kind="width", marker_key="width-1")
    fx = _effects(env)
    assert find(first, fx) is None
    done = perform(first, fx)
    assert perform(first, fx) == done and find(first, fx) == done  # a retry: the same
    second = act.EditComment(target=TARGET, number=number, body="runs: two",
                             marker_kind="width", marker_key="width-1")
    assert second.key != first.key and find(second, fx) is None
    assert perform(second, fx) == done == perform(second, fx)  # edited in place
    comments = env.forge.list_comments(TARGET, number)
    kernel = [c for c in comments if c.author == KERNEL]
    assert len(kernel) == 1 and kernel[0].id == done.comment_id
    assert kernel[0].body.startswith("runs: two\n")
    assert [c.body for c in comments if c.author == OUTSIDER] == [
        with_marker("forged", "width", "width-1")]  # another's marker: never edited
    outsider = next(c for c in comments if c.author == OUTSIDER)
    with pytest.raises((ForgeError, OuterloopError)):
        env.forge.edit_comment(TARGET, number, outsider.id, "taken over")


def test_pull_request_is_found_by_head_when_reconciled_after_its_effect(env: Env) -> None:
    from outerloop.kernel.executor import find, perform

    clone = env.tmp / "src"
    env.forge.fetch(TARGET, clone, "main")
    sha = _commit(clone, "candidate")
    action = act.OpenPR(target=TARGET, head="outerloop/agent-01/r", base="main", sha=sha,
                        source=str(clone), title="t", body="b")
    fx = _effects(env)
    done = perform(action, fx)
    assert find(action, fx) == done
    again = perform(action, fx)
    assert again == done
