"""The local forge against real git and a real SQLite file."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from outerloop.errors import ForgeError, ForgeForbidden, NotFound
from outerloop.forge.base import APPROVED_LABEL, Association, Forge
from outerloop.forge.local import REFUSE_FILE, LocalForge
from outerloop.forge.standing import issue_has_standing

REPO = "acme/demo"
KERNEL = "outerloop"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin",
}


def run_git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def commit(ws: Path, name: str, text: str) -> str:
    (ws / name).write_text(text)
    run_git(ws, "add", name)
    run_git(ws, "commit", "-q", "-m", f"write {name}")
    return run_git(ws, "rev-parse", "HEAD")


@pytest.fixture
def forge(tmp_path: Path) -> LocalForge:
    src = tmp_path / "src"
    src.mkdir()
    (src / "README.md").write_text("demo\n")
    local = LocalForge(tmp_path / "forge", KERNEL)
    local.import_repo(src, REPO)
    return local


@pytest.fixture
def ws(forge: LocalForge, tmp_path: Path) -> Path:
    dest = tmp_path / "ws"
    forge.fetch(REPO, dest, "main")
    return dest


def test_local_forge_satisfies_the_protocol_when_typed_as_forge(forge: LocalForge) -> None:
    typed: Forge = forge
    assert typed.login == KERNEL


def test_import_commits_a_plain_directory_when_it_is_not_a_git_repo(
    forge: LocalForge,
) -> None:
    assert forge.default_branch(REPO) == "main"
    assert forge.read_file(REPO, "README.md", "main") == b"demo\n"


def test_import_leaves_the_directory_untouched_when_it_is_not_a_git_repo(
    forge: LocalForge, tmp_path: Path,
) -> None:
    assert not (tmp_path / "src" / ".git").exists()


def test_import_copies_branches_when_source_is_a_git_repo(tmp_path: Path) -> None:
    src = tmp_path / "gitsrc"
    src.mkdir()
    run_git(src, "init", "-q", "-b", "trunk")
    sha = commit(src, "a.txt", "a\n")
    run_git(src, "branch", "side")
    local = LocalForge(tmp_path / "forge", KERNEL)
    assert local.import_repo(src, "acme/git") == sha
    assert local.default_branch("acme/git") == "trunk"
    assert local.branch_head("acme/git", "side") == sha


def test_import_makes_the_importer_an_owner_when_it_succeeds(forge: LocalForge) -> None:
    assert forge.role("maintainer") == "owner"


def test_import_is_refused_when_the_repo_exists(forge: LocalForge, tmp_path: Path) -> None:
    with pytest.raises(ForgeError, match="already exists"):
        forge.import_repo(tmp_path / "src", REPO)


def test_unknown_repo_raises_not_found_when_named(forge: LocalForge) -> None:
    with pytest.raises(NotFound, match="repo import"):
        forge.list_issues("acme/nothing")


def test_repo_name_is_refused_when_it_could_escape_the_root(forge: LocalForge) -> None:
    with pytest.raises(ForgeError):
        forge.repo_dir("../x")
    with pytest.raises(ForgeError):
        forge.repo_dir("../..")


def test_read_file_returns_none_when_path_or_ref_is_missing(forge: LocalForge) -> None:
    assert forge.read_file(REPO, "nope.txt", "main") is None
    assert forge.read_file(REPO, "README.md", "no-such-branch") is None


def test_fetch_returns_the_sha_when_cloning(forge: LocalForge, ws: Path) -> None:
    assert run_git(ws, "rev-parse", "HEAD") == forge.branch_head(REPO, "main")


def test_fetch_updates_an_existing_clone_when_the_branch_moved(
    forge: LocalForge, ws: Path,
) -> None:
    head = forge.branch_head(REPO, "main")
    new = forge.commit_files(REPO, "main", {"b.txt": b"b\n"}, "add b", head)
    assert forge.fetch(REPO, ws, "main") == new
    assert run_git(ws, "cat-file", "-t", new) == "commit"


def test_push_creates_the_branch_when_it_does_not_exist(forge: LocalForge, ws: Path) -> None:
    sha = commit(ws, "x.txt", "x\n")
    forge.push(REPO, ws, sha, "outerloop/agent-01/run")
    assert forge.branch_head(REPO, "outerloop/agent-01/run") == sha


def test_push_is_refused_for_rights_while_the_refuse_hook_names_it(
        forge: LocalForge, ws: Path) -> None:
    sha = commit(ws, "x.txt", "x\n")
    refuse = forge.root / REFUSE_FILE
    refuse.write_text("push *\n")
    with pytest.raises(ForgeForbidden, match="403"):
        forge.push(REPO, ws, sha, "outerloop/agent-01/run")
    assert forge.branch_head(REPO, "outerloop/agent-01/run") is None
    refuse.unlink()
    forge.push(REPO, ws, sha, "outerloop/agent-01/run")
    assert forge.branch_head(REPO, "outerloop/agent-01/run") == sha


def test_push_fast_forwards_when_the_branch_is_an_ancestor(forge: LocalForge, ws: Path) -> None:
    first = commit(ws, "x.txt", "1\n")
    forge.push(REPO, ws, first, "feature")
    second = commit(ws, "x.txt", "2\n")
    forge.push(REPO, ws, second, "feature")
    assert forge.branch_head(REPO, "feature") == second


def test_push_is_a_no_op_when_the_branch_is_already_there(forge: LocalForge, ws: Path) -> None:
    sha = commit(ws, "x.txt", "1\n")
    forge.push(REPO, ws, sha, "feature")
    forge.push(REPO, ws, sha, "feature")
    assert forge.branch_head(REPO, "feature") == sha


def test_push_never_overwrites_a_foreign_commit_when_branch_diverged(
    forge: LocalForge, ws: Path,
) -> None:
    ours = commit(ws, "x.txt", "1\n")
    forge.push(REPO, ws, ours, "feature")
    human = forge.commit_files(REPO, "feature", {"fix.txt": b"human\n"}, "human fix", ours)
    revised = commit(ws, "x.txt", "2\n")
    with pytest.raises(ForgeError, match="fast-forward only"):
        forge.push(REPO, ws, revised, "feature")
    assert forge.branch_head(REPO, "feature") == human


def test_push_is_refused_when_the_sha_is_not_in_the_source(forge: LocalForge, ws: Path) -> None:
    with pytest.raises(ForgeError, match="has no commit"):
        forge.push(REPO, ws, "1" * 40, "feature")


def test_push_ignores_hooks_when_source_has_one(forge: LocalForge, ws: Path) -> None:
    hook = ws / ".git" / "hooks" / "pre-push"
    hook.write_text(f"#!/bin/sh\ntouch {ws.parent / 'hook-ran'}\nexit 1\n")
    hook.chmod(0o755)
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    assert not (ws.parent / "hook-ran").exists()


def test_commit_files_writes_over_the_tree_when_head_matches(forge: LocalForge) -> None:
    head = forge.branch_head(REPO, "main")
    sha = forge.commit_files(REPO, "main", {"dir/a.json": b"{}"}, "add", head)
    assert forge.branch_head(REPO, "main") == sha
    assert forge.read_file(REPO, "dir/a.json", sha) == b"{}"
    assert forge.read_file(REPO, "README.md", sha) == b"demo\n"


def test_commit_files_writes_each_file_byte_for_byte_when_given_many(forge: LocalForge
                                                                      ) -> None:
    files = {f"board/{n}.txt": f"file {n}\r\n".encode() for n in range(5)}
    files |= {"bin/data": bytes(range(256)), "empty": b"", "board/CLIMB.md": "é\n".encode()}
    sha = forge.commit_files(REPO, "main", files, "many", forge.branch_head(REPO, "main"))
    assert {path: forge.read_file(REPO, path, sha) for path in files} == files


def test_read_file_gives_a_file_only_at_a_commit(forge: LocalForge) -> None:
    head = forge.branch_head(REPO, "main")
    sha = forge.commit_files(REPO, "main", {"d/a.json": b"{}", "empty": b"",
                                            "with space.txt": b"x\ny\n"}, "add", head)
    assert forge.read_file(REPO, "empty", sha) == b""
    assert forge.read_file(REPO, "with space.txt", "main") == b"x\ny\n"
    assert forge.read_file(REPO, "d", sha) is None  # a directory is not a file
    blob = run_git(forge.repo_dir(REPO), "rev-parse", f"{sha}:d/a.json")
    assert forge.read_file(REPO, "d/a.json", blob) is None  # a blob names no commit
    tree = run_git(forge.repo_dir(REPO), "rev-parse", f"{sha}^{{tree}}")
    assert forge.read_file(REPO, "d/a.json", tree) is None  # nor does a tree
    assert forge.read_file(REPO, "README.md", "-main") is None


def test_commit_files_refuses_when_the_head_moved(forge: LocalForge) -> None:
    stale = forge.branch_head(REPO, "main")
    moved = forge.commit_files(REPO, "main", {"a": b"1"}, "one", stale)
    with pytest.raises(ForgeError, match="head moved"):
        forge.commit_files(REPO, "main", {"a": b"2"}, "two", stale)
    assert forge.branch_head(REPO, "main") == moved


def test_commit_files_refuses_when_expecting_no_branch_but_one_exists(
    forge: LocalForge,
) -> None:
    with pytest.raises(ForgeError, match="head moved"):
        forge.commit_files(REPO, "main", {"a": b"1"}, "one", None)


def test_commit_files_creates_an_orphan_branch_when_expected_head_is_none(
    forge: LocalForge,
) -> None:
    sha = forge.commit_files(REPO, "research-log", {"results/leader.json": b"{}"}, "log", None)
    assert forge.read_file(REPO, "README.md", sha) is None


@pytest.mark.parametrize("path", ["../x", "/abs", ".git/config", "a//b", "a/./b"])
def test_commit_files_refuses_a_path_when_it_is_not_clean(forge: LocalForge, path: str) -> None:
    with pytest.raises(ForgeError, match="path"):
        forge.commit_files(REPO, "main", {path: b"x"}, "bad",
                           forge.branch_head(REPO, "main"))


def test_issue_author_association_maps_role_when_user_is_known(forge: LocalForge) -> None:
    forge.set_role("carol", "collaborator")
    assert forge.open_issue_as(REPO, "t", "b", "carol").author_association == (
        Association.COLLABORATOR)


def test_issue_author_is_none_when_user_is_unknown(forge: LocalForge) -> None:
    assert forge.open_issue_as(REPO, "t", "b", "stranger").author_association == (
        Association.NONE)


def test_issues_and_prs_share_numbering_when_interleaved(forge: LocalForge, ws: Path) -> None:
    first = forge.create_issue(REPO, "one", "")
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    pr = forge.open_pr(REPO, "feature", "main", "pr", "")
    second = forge.create_issue(REPO, "two", "")
    assert (first.number, pr.number, second.number) == (1, 2, 3)
    assert forge.get_issue(REPO, 2).is_pull_request


def test_list_issues_excludes_prs_and_closed_when_listing(forge: LocalForge, ws: Path) -> None:
    keep = forge.create_issue(REPO, "keep", "")
    gone = forge.create_issue(REPO, "gone", "")
    forge.close_issue(REPO, gone.number)
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    forge.open_pr(REPO, "feature", "main", "pr", "")
    assert [i.number for i in forge.list_issues(REPO)] == [keep.number]


def test_list_issues_filters_by_update_when_since_is_given(forge: LocalForge) -> None:
    old = forge.create_issue(REPO, "old", "")
    new = forge.create_issue(REPO, "new", "")
    assert [i.number for i in forge.list_issues(REPO, since=old.updated_at)] == [new.number]
    forge.post_comment(REPO, old.number, "bump")
    seen = forge.list_issues(REPO, since=new.updated_at)
    assert [i.number for i in seen] == [old.number]


def test_comments_since_returns_only_newer_when_since_is_given(forge: LocalForge) -> None:
    issue = forge.create_issue(REPO, "t", "")
    first = forge.post_comment(REPO, issue.number, "one")
    second = forge.comment_as(REPO, issue.number, "two", "maintainer")
    assert forge.list_comments(REPO, issue.number, since=first.updated_at) == [second]
    assert forge.list_comments(REPO, issue.number) == [first, second]


def test_timestamps_are_strictly_increasing_when_the_clock_stands_still(
    tmp_path: Path,
) -> None:
    frozen = datetime(2026, 1, 1, tzinfo=UTC)
    local = LocalForge(tmp_path / "forge", KERNEL, clock=lambda: frozen)
    src = tmp_path / "s"
    src.mkdir()
    (src / "f").write_text("x")
    local.import_repo(src, REPO)
    issue = local.create_issue(REPO, "t", "")
    stamps = [local.post_comment(REPO, issue.number, str(i)).created_at for i in range(3)]
    assert stamps == sorted(set(stamps)) and stamps[0] > frozen


def test_comment_raises_not_found_when_the_issue_does_not_exist(forge: LocalForge) -> None:
    with pytest.raises(NotFound, match="issue list"):
        forge.post_comment(REPO, 99, "x")


def test_label_event_records_no_write_when_labeller_has_no_role(forge: LocalForge) -> None:
    issue = forge.open_issue_as(REPO, "t", "b", "stranger")
    forge.label_as(REPO, issue.number, APPROVED_LABEL, "stranger")
    issue = forge.get_issue(REPO, issue.number)
    events = forge.label_events(REPO, issue.number)
    assert [(e.actor, e.actor_can_write) for e in events] == [("stranger", False)]
    assert not issue_has_standing(issue, events)


def test_label_gives_standing_when_applied_by_a_collaborator(forge: LocalForge) -> None:
    forge.set_role("carol", "collaborator")
    issue = forge.open_issue_as(REPO, "t", "b", "stranger")
    forge.label_as(REPO, issue.number, APPROVED_LABEL, "carol")
    issue = forge.get_issue(REPO, issue.number)
    assert issue.labels == (APPROVED_LABEL,)
    assert issue_has_standing(issue, forge.label_events(REPO, issue.number))


def test_relabelling_adds_no_event_when_label_is_present(forge: LocalForge) -> None:
    issue = forge.create_issue(REPO, "t", "")
    forge.label_as(REPO, issue.number, "x", "carol")
    forge.label_as(REPO, issue.number, "x", "maintainer")
    assert len(forge.label_events(REPO, issue.number)) == 1


def test_open_pr_is_found_by_head_when_open(forge: LocalForge, ws: Path) -> None:
    sha = commit(ws, "x.txt", "1\n")
    forge.push(REPO, ws, sha, "feature")
    pr = forge.open_pr(REPO, "feature", "main", "T", "B", draft=True)
    found = forge.find_open_pr(REPO, "feature")
    assert found is not None and found.number == pr.number
    assert (found.head_sha, found.draft, found.author) == (sha, True, KERNEL)
    assert forge.find_open_pr(REPO, "other") is None


def test_open_pr_is_refused_when_one_is_open_for_the_head(forge: LocalForge, ws: Path) -> None:
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    forge.open_pr(REPO, "feature", "main", "T", "B")
    with pytest.raises(ForgeError, match="already open"):
        forge.open_pr(REPO, "feature", "main", "T", "B")


def test_open_pr_is_refused_when_head_branch_is_missing(forge: LocalForge) -> None:
    with pytest.raises(ForgeError, match="no branch"):
        forge.open_pr(REPO, "ghost", "main", "T", "B")


def test_pr_head_sha_follows_the_branch_when_pushed_again(forge: LocalForge, ws: Path) -> None:
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    newer = commit(ws, "x.txt", "2\n")
    forge.push(REPO, ws, newer, "feature")
    again = forge.get_pr(REPO, pr.number)
    assert again.head_sha == newer and again.updated_at > pr.updated_at


def test_update_pr_changes_only_given_fields_when_called(forge: LocalForge, ws: Path) -> None:
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    updated = forge.update_pr(REPO, pr.number, body="new body")
    assert (updated.title, updated.body) == ("T", "new body")


def test_merge_puts_head_into_base_when_a_writer_merges(forge: LocalForge, ws: Path) -> None:
    head = commit(ws, "x.txt", "1\n")
    forge.push(REPO, ws, head, "feature")
    forge.commit_files(REPO, "main", {"other.txt": b"o"}, "meanwhile",
                       forge.branch_head(REPO, "main"))
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    merged = forge.merge_pr(REPO, pr.number, "maintainer")
    assert forge.branch_head(REPO, "main") == merged
    assert forge.read_file(REPO, "x.txt", "main") == b"1\n"
    assert forge.read_file(REPO, "other.txt", "main") == b"o"
    after = forge.get_pr(REPO, pr.number)
    assert (after.state, after.merged) == ("closed", True)
    assert forge.find_open_pr(REPO, "feature") is None


def test_merge_is_refused_when_the_user_cannot_write(forge: LocalForge, ws: Path) -> None:
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    with pytest.raises(ForgeError, match="no write access"):
        forge.merge_pr(REPO, pr.number, "stranger")


def test_merge_is_refused_when_it_conflicts(forge: LocalForge, ws: Path) -> None:
    forge.push(REPO, ws, commit(ws, "README.md", "ours\n"), "feature")
    forge.commit_files(REPO, "main", {"README.md": b"theirs\n"}, "clash",
                       forge.branch_head(REPO, "main"))
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    with pytest.raises(ForgeError, match="conflicts"):
        forge.merge_pr(REPO, pr.number, "maintainer")


def test_close_pr_closes_without_merging_when_called(forge: LocalForge, ws: Path) -> None:
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    forge.close_pr_as(REPO, pr.number, "maintainer")
    closed = forge.get_pr(REPO, pr.number)
    assert (closed.state, closed.merged) == ("closed", False)
    assert forge.find_open_pr(REPO, "feature") is None


def test_reviews_and_line_comments_read_back_when_submitted(
    forge: LocalForge, ws: Path,
) -> None:
    forge.push(REPO, ws, commit(ws, "x.txt", "1\n"), "feature")
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    before = datetime.now(UTC) - timedelta(days=1)
    review = forge.review_as(REPO, pr.number, "needs work", "maintainer",
                             "CHANGES_REQUESTED", [("x.txt", 1, "why 1?")])
    assert forge.list_reviews(REPO, pr.number) == [review]
    notes = forge.list_review_comments(REPO, pr.number, since=before)
    assert [(n.path, n.line, n.body) for n in notes] == [("x.txt", 1, "why 1?")]
    assert forge.list_review_comments(REPO, pr.number, since=notes[0].created_at) == []


def test_diff_shows_the_change_when_asked(forge: LocalForge, ws: Path) -> None:
    forge.push(REPO, ws, commit(ws, "x.txt", "hello\n"), "feature")
    pr = forge.open_pr(REPO, "feature", "main", "T", "B")
    assert "+hello" in forge.diff_pr(REPO, pr.number)


def test_a_second_process_sees_writes_when_sharing_the_database(
    forge: LocalForge, tmp_path: Path,
) -> None:
    other = LocalForge(tmp_path / "forge", "maintainer")
    issue = other.create_issue(REPO, "from elsewhere", "")
    assert forge.get_issue(REPO, issue.number).author == "maintainer"


def test_numbers_stay_unique_when_two_processes_open_issues_at_once(
    forge: LocalForge, tmp_path: Path,
) -> None:
    script = (
        "import sys; from pathlib import Path; from outerloop.forge.local import LocalForge\n"
        "f = LocalForge(Path(sys.argv[1]), 'outerloop')\n"
        "for i in range(10): f.create_issue('acme/demo', f'{sys.argv[2]}-{i}', '')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "forge"), tag])
             for tag in ("a", "b")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    numbers = [i.number for i in forge.list_issues(REPO)]
    assert sorted(numbers) == list(range(1, 21))


@pytest.mark.parametrize("bad", ["a..b", "a b", "x.lock", "a/.b", "end/", "-x", ""])
def test_branch_head_refuses_a_name_git_would_refuse_when_asked_again(
        forge: LocalForge, bad: str) -> None:
    # asked twice: the second answer (remembered per name) refuses as the first
    for _ in range(2):
        with pytest.raises(ForgeError, match=r"is not (a )?valid"):
            forge.branch_head(REPO, bad)
    assert forge.branch_head(REPO, "main") is not None
    assert forge.branch_head(REPO, "outerloop/agent-01/run") is None


def test_refs_read_from_files_agree_with_git_and_packed_refs_still_resolve(
    forge: LocalForge,
) -> None:
    """``default_branch`` and ``branch_head`` read the bare repository's files (no git
    process each tick) and answer as git does; a packed ref (no loose file) and a
    branch that does not exist go to git."""
    bare = forge._bare(REPO)
    head = run_git(bare, "rev-parse", "refs/heads/main")
    assert (bare / "refs" / "heads" / "main").is_file()
    forge.branch_head(REPO, "main")  # the name's git check-ref-format: once a process
    with pytest.MonkeyPatch.context() as no_git:  # read from files: git is not run
        no_git.setenv("PATH", str(bare / "no-such-dir"))
        assert forge.default_branch(REPO) == "main"
        assert forge.branch_head(REPO, "main") == head
    assert forge.read_file(REPO, "README.md", head) == b"demo\n"  # read once at a sha
    with pytest.MonkeyPatch.context() as no_git:
        no_git.setenv("PATH", str(bare / "no-such-dir"))
        assert forge.read_file(REPO, "README.md", head) == b"demo\n"
    run_git(bare, "update-ref", "refs/heads/topic/one", head)
    run_git(bare, "pack-refs", "--all")
    assert not (bare / "refs" / "heads" / "main").exists()
    assert forge.branch_head(REPO, "main") == head
    assert forge.branch_head(REPO, "topic/one") == head
    assert forge.branch_head(REPO, "nowhere") is None
    run_git(bare, "symbolic-ref", "HEAD", "refs/heads/topic/one")
    assert forge.default_branch(REPO) == "topic/one"
