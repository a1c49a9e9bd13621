"""A ledger repository a machine crash broke is repaired by the next tick that commits.

Git writes its index, refs and objects without fsync unless told to; after a power loss
any of them can be empty or missing, and every later ``git add``/``commit`` fails. The
ledger files themselves (fsynced line by line) are the truth: the tick that meets a
broken repository rebuilds it around them, commits its own events and says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.kernel.tick import HEARTBEAT_FILE, run_tick
from tests.support import make_home, open_issue


def _git(ledger: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ledger, capture_output=True, text=True,
                          check=True).stdout


def _files(ledger: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ledger)): p.read_bytes() for p in ledger.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(ledger).parts[0]}


def _newest_loose_object(git_dir: Path) -> Path:
    """The object a commit writes last: the commit itself (its blobs and trees may share
    its mtime, so the clock cannot tell which came last)."""
    sha = (git_dir / "refs" / "heads" / "main").read_text().strip()
    return git_dir / "objects" / sha[:2] / sha[2:]


def _commits_after(settings: Settings, breaker: Callable[[Path], None]) -> list[str]:
    """Tick twice (two commits), break ``ledger/.git``, tick again with new events;
    check that tick committed every ledger file as it is; return its repair notes."""
    ledger = settings.home / "ledger"
    for title in ("Faster please", "Smaller please"):
        open_issue(settings, title, "Make it all better.")
        earlier = run_tick(settings)
        assert earlier.events and earlier.commit is not None
    breaker(ledger / ".git")
    open_issue(settings, "Quicker please", "Make everything quicker.")
    before = _files(ledger)
    report = run_tick(settings)
    assert report.events and report.commit is not None, report.notes
    after = _files(ledger)
    assert all(after[name].startswith(data) for name, data in before.items())
    assert _git(ledger, "status", "--porcelain") == ""
    for name, data in after.items():
        shown = subprocess.run(["git", "show", f"HEAD:{name}"], cwd=ledger,
                               capture_output=True, check=True).stdout
        assert shown == data, name
    _git(ledger, "fsck", "--no-dangling")
    repaired = [n for n in report.notes if n.startswith("LEDGER GIT REPAIRED")]
    beat = json.loads((settings.home / HEARTBEAT_FILE).read_text())
    assert repaired and beat["ledger_git_repaired"] == repaired
    open_issue(settings, "Sooner please", "Make it all sooner.")
    later = run_tick(settings)
    assert later.commit is not None
    assert not any(n.startswith("LEDGER GIT REPAIRED") for n in later.notes)
    return repaired


def test_next_tick_commits_and_reports_the_repair_when_the_index_was_emptied(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    (note,) = _commits_after(settings, lambda git: (git / "index").write_bytes(b""))
    assert "ledger/.git/index was unreadable" in note


def test_next_tick_commits_and_reports_the_repair_when_the_branch_ref_was_emptied(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    (note,) = _commits_after(settings,
                             lambda git: (git / "refs" / "heads" / "main").write_bytes(b""))
    assert "ledger/.git/refs/heads/main" in note and "reset to" in note


def test_next_tick_commits_and_reports_the_repair_when_the_newest_object_vanished(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    (note,) = _commits_after(settings, lambda git: _newest_loose_object(git).unlink())
    assert "ledger/.git/refs/heads/main" in note and "reset to" in note


def test_next_tick_commits_and_reports_the_repair_when_the_newest_object_is_garbage(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)

    def corrupt(git: Path) -> None:
        newest = _newest_loose_object(git)
        newest.chmod(0o644)
        newest.write_bytes(b"\x00" * 40)

    (note,) = _commits_after(settings, corrupt)
    assert "ledger/.git/refs/heads/main" in note and "reset to" in note


def _wreck(git: Path) -> None:
    for obj in (git / "objects").glob("??/*"):
        obj.unlink()
    (git / "refs" / "heads" / "main").write_bytes(b"0" * 40 + b"\n")


def test_broken_repository_is_moved_aside_and_rebuilt_when_no_good_commit_remains(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    (note,) = _commits_after(settings, _wreck)
    (aside,) = (settings.home / "ledger-damaged").glob("*/git")
    assert (aside / "HEAD").is_file() and str(aside) in note


def _bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def _home_with_remote(tmp_path: Path) -> tuple[Settings, Path]:
    """A home whose ``ledger_remote`` is a fresh bare repository (returned with it)."""
    remote = _bare(tmp_path / "remote.git")
    settings = make_home(tmp_path)
    config = settings.home / "outerloop.toml"
    config.write_text(f'ledger_remote = "{remote}"\n' + config.read_text())
    return load_settings(settings.home), remote


def test_rebuilt_repository_continues_the_remotes_history_when_a_ledger_remote_is_set(
        tmp_path: Path) -> None:
    settings, remote = _home_with_remote(tmp_path)
    (note,) = _commits_after(settings, _wreck)
    assert "its history continues from" in note
    pushed = _git(remote, "rev-parse", "main").strip()
    assert pushed == _git(settings.home / "ledger", "rev-parse", "HEAD").strip()


def test_quiet_tick_command_says_on_stderr_that_it_repaired_the_ledger_git_when_it_did(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Faster please", "Make it all faster.")
    assert run_tick(settings).commit is not None
    (settings.home / "ledger" / ".git" / "index").write_bytes(b"")
    open_issue(settings, "Quicker please", "Make everything quicker.")
    done = subprocess.run([sys.executable, "-m", "outerloop", "tick", "--quiet", "--home",
                           str(settings.home)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == ""
    assert "outerloop: LEDGER GIT REPAIRED: ledger/.git/index was unreadable" in done.stderr
    assert _git(settings.home / "ledger", "status", "--porcelain") == ""


def test_doctor_fails_naming_the_fix_while_the_ledger_remote_refuses_its_pushes(
        tmp_path: Path) -> None:
    from outerloop.doctor.ledger import check_ledger

    settings, remote = _home_with_remote(tmp_path)
    config = settings.home / "outerloop.toml"
    open_issue(settings, "Faster please", "Make it all faster.")
    run_tick(settings)
    assert [c.status for c in check_ledger(settings) if c.name == "ledger remote"] == ["ok"]
    # the remote refuses the ledger's pushes (a protected branch, a hook; a remote
    # another home moved on makes the tick refuse first: tests/e2e/test_restore.py)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'main is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    open_issue(settings, "Quicker please", "Make everything quicker.")
    first = run_tick(settings)
    assert any("ledger push to" in n and "refused" in n for n in first.notes), first.notes
    run_tick(settings)
    (check,) = [c for c in check_ledger(settings) if c.name == "ledger remote"]
    assert check.status == "fail", check.line()
    assert f"every push of the ledger to {remote} is refused since" in check.detail
    assert "--force-with-lease" in check.fix and "fresh remote" in check.fix
    # the operator points the home at a fresh remote: the next tick pushes, doctor is ok
    fresh = _bare(tmp_path / "fresh.git")
    config.write_text(config.read_text().replace(str(remote), str(fresh)))
    settings = load_settings(settings.home)
    run_tick(settings)
    assert [c.status for c in check_ledger(settings) if c.name == "ledger remote"] == ["ok"]
    assert _git(fresh, "rev-parse", "main").strip() == \
        _git(settings.home / "ledger", "rev-parse", "HEAD").strip()


def test_remote_keeps_receiving_the_ledger_after_a_repair_reset_the_branch(
        tmp_path: Path) -> None:
    """The crash took the newest commit, which the remote already has: the repair resets
    the branch to an older one, so the next commit is not a fast-forward of the remote.
    The push joins the remote's commit (its files are earlier states of ours) and goes
    through; nothing is forced and the remote's commits stay in the history."""
    settings, remote = _home_with_remote(tmp_path)
    (note,) = _commits_after(settings, lambda git: _newest_loose_object(git).unlink())
    assert "reset to" in note
    ledger = settings.home / "ledger"
    head = _git(ledger, "rev-parse", "HEAD").strip()
    assert _git(remote, "rev-parse", "main").strip() == head
    assert not (ledger / ".git" / "outerloop-push-refused").exists()
    _git(ledger, "fsck", "--no-dangling")


def test_a_remote_missed_by_the_repair_tick_is_joined_by_the_next_tick(
        tmp_path: Path) -> None:
    """The repair tick could not reach the remote (its push and join failed): the next
    tick's catch-up finds the histories diverged, sees the remote holds only earlier
    states of our files, joins instead of refusing, and the push goes through."""
    settings, remote = _home_with_remote(tmp_path)
    away = tmp_path / "remote-away.git"

    def crash_and_lose_the_remote(git: Path) -> None:
        _newest_loose_object(git).unlink()
        remote.rename(away)

    (note,) = _commits_after(settings, crash_and_lose_the_remote)
    assert "reset to" in note
    away.rename(remote)
    open_issue(settings, "Later please", "Make it all later.")
    report = run_tick(settings)
    assert any("joined" in n for n in report.notes), report.notes
    ledger = settings.home / "ledger"
    assert _git(remote, "rev-parse", "main").strip() == _git(ledger, "rev-parse",
                                                             "HEAD").strip()


@pytest.mark.parametrize("where", ["a file only there", "a line only there"])
def test_a_remote_with_lines_this_ledger_lacks_is_never_joined(tmp_path: Path,
                                                               where: str) -> None:
    """A remote whose files are not earlier states of ours (another home pushed there)
    is never joined and nothing is forced: the tick refuses in one line (catch-up)."""
    from outerloop.ledger.catchup import LedgerBehind

    settings, remote = _home_with_remote(tmp_path)
    open_issue(settings, "Faster please", "Make it all better.")
    assert run_tick(settings).commit is not None
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    if where == "a file only there":
        (other / "stranger.jsonl").write_text("{}\n")
    else:
        shared = next(p for p in sorted(other.rglob("*.jsonl")) if ".git" not in p.parts)
        shared.write_bytes(shared.read_bytes() + b'{"kind": "not ours"}\n')
    subprocess.run(["git", "add", "-A"], cwd=other, check=True)
    subprocess.run(["git", "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm",
                    "elsewhere"], cwd=other, check=True)
    subprocess.run(["git", "push", "-q", "origin", "main"], cwd=other, check=True)
    theirs = _git(remote, "rev-parse", "main").strip()
    _git(settings.home / "ledger", "commit", "--allow-empty", "-qm", "diverge")
    open_issue(settings, "Smaller please", "Make it smaller.")
    with pytest.raises(LedgerBehind, match="diverged"):
        run_tick(settings)
    assert _git(remote, "rev-parse", "main").strip() == theirs
