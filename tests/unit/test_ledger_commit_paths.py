"""A commit takes the files that changed since the last one (``ledger/pending.py``,
``ledger/gittree.py``), not ``git add -A``: each change is named for the next commit
before the moment after which no one would know it, so a tick killed before its commit
leaves nothing the next commit misses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from outerloop.ledger import attest, gitrepo, gittree, pending, segments
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, LogicalClock, rebuild, run_file, tick_file

TARGET = "owner/name"
DIR = "owner__name"


def _git(home: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=home / "ledger", capture_output=True,
                          text=True, check=True).stdout


def _committed(home: Path) -> set[str]:
    return set(_git(home, "ls-tree", "-r", "--name-only", "HEAD").split())


def _note(path: Path, text: str, clock: int = 0) -> None:
    LedgerWriter(path, LogicalClock(clock)).append(ev.Note(level="info", text=text))


def _tick_commit(home: Path) -> gitrepo.Committed:
    """What the tick does from its fold to its commit: fold, attest, commit."""
    state = rebuild(home)
    attest.attest(home, dict(state.heads))
    return gitrepo.commit(home, state.fresh, stale_lock_s=60)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    gitrepo.init_repo(tmp_path)
    _note(tick_file(tmp_path, TARGET), "first")
    assert _tick_commit(tmp_path).sha  # the first commit: git add -A (no HEAD yet)
    assert not gitrepo.has_backlog(tmp_path)
    return tmp_path


def test_a_run_file_a_killed_tick_folded_is_committed_by_the_next_tick(home: Path) -> None:
    run = run_file(home, TARGET, "tour-1-agent-01")
    _note(run, "a run job's line", clock=10)  # a new, untracked file
    assert rebuild(home).fresh == 1  # the tick folds it, saves its cache, and is killed
    state = rebuild(home)
    assert state.fresh == 0  # the next fold takes it as read
    assert gitrepo.commit(home, 0, stale_lock_s=60).sha
    assert f"{DIR}/runs/{run.name}" in _committed(home)
    assert _git(home, "status", "--porcelain") == ""
    assert not gitrepo.has_backlog(home)


def test_a_heads_segment_a_killed_tick_attested_is_committed_by_the_next_tick(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 100)  # every line a new segment
    _note(tick_file(home, TARGET), "second", clock=5)
    state = rebuild(home)
    attest.attest(home, dict(state.heads))  # a new heads segment; killed before the commit
    made = segments.series(home / "ledger" / DIR, attest.HEADS_FILE)[-1]
    assert made != attest.HEADS_FILE
    assert rebuild(home).fresh == 0
    assert attest.attest(home, dict(rebuild(home).heads)) == 0  # nothing new to attest
    assert gitrepo.commit(home, 0, stale_lock_s=60).sha
    assert f"{DIR}/{made}" in _committed(home)
    assert _git(home, "status", "--porcelain") == ""


def test_a_file_whose_stat_alone_moved_is_not_named_for_the_commit(home: Path) -> None:
    """Touched (or copied with new times): the fold checks it again and reads nothing
    new, so the commit does not hash it again (segment 1 of a long history: 1.6 GB)."""
    path = tick_file(home, TARGET)
    os.utime(path, ns=(1, 1))
    state = rebuild(home)
    assert state.fresh == 0 and state.frozen == {}
    assert not pending.exists(home / "ledger")
    _note(path, "second", clock=5)
    rebuild(home)
    assert pending.read(home / "ledger") == {f"{DIR}/tick.jsonl"}


def test_a_commit_takes_the_files_named_and_leaves_a_stray_file_alone(home: Path) -> None:
    stray = home / "ledger" / DIR / "notes.txt"
    stray.write_text("an operator's scratch file, no ledger file\n")
    _note(tick_file(home, TARGET), "second", clock=5)
    done = _tick_commit(home)
    assert done.sha and done.notes == []
    assert f"{DIR}/tick.jsonl" in _committed(home) and f"{DIR}/notes.txt" not in _committed(home)
    assert _git(home, "status", "--porcelain") == f"?? {DIR}/notes.txt\n"  # index told
    assert _git(home, "show", "HEAD:owner__name/tick.jsonl") == \
        tick_file(home, TARGET).read_text()


def test_a_journal_that_names_nothing_commits_everything(home: Path) -> None:
    stray = home / "ledger" / DIR / "notes.txt"
    stray.write_text("left by an older kernel's tick, which only marked a backlog\n")
    pending.journal_path(home / "ledger").write_text("")
    assert gitrepo.commit(home, 0, stale_lock_s=60).sha
    assert f"{DIR}/notes.txt" in _committed(home)
    assert not gitrepo.has_backlog(home)


def test_a_kept_out_file_is_not_committed_and_stays_named(home: Path) -> None:
    run = run_file(home, TARGET, "tour-1-agent-01")
    _note(run, "a run job's line", clock=10)
    _note(tick_file(home, TARGET), "second", clock=11)
    rebuild(home)
    key = f"{DIR}/runs/{run.name}"
    done = gitrepo.commit(home, 2, stale_lock_s=60, keep_out=[key])
    assert done.sha and key not in _committed(home)
    assert pending.read(home / "ledger") == {key}
    assert gitrepo.commit(home, 0, stale_lock_s=60).sha and key in _committed(home)


def test_nothing_changed_makes_no_commit_and_clears_the_journal(home: Path) -> None:
    before = _git(home, "rev-parse", "HEAD")
    pending.note(home / "ledger", [f"{DIR}/tick.jsonl"])  # named, but as committed
    assert gitrepo.commit(home, 0, stale_lock_s=60).sha is None
    assert _git(home, "rev-parse", "HEAD") == before and not gitrepo.has_backlog(home)


def _landing_in_17(n: int) -> bytes:
    """A file's bytes whose blob git keeps under ``objects/17/`` (the folder git, and the
    kernel, count to tell whether loose objects are many)."""
    pad = 0
    while True:
        data = f"pad {n} {pad}\n".encode()
        if gittree.blob_sha(data).hex().startswith("17"):
            return data
        pad += 1


def test_loose_objects_are_many_when_the_sampled_folder_holds_over_its_share(
        tmp_path: Path) -> None:
    folder = tmp_path / "objects" / "17"
    folder.mkdir(parents=True)
    for n in range(27):
        (folder / f"{n:038x}").write_bytes(b"")
    assert not gittree.loose_objects_many(tmp_path)  # 6700 / 256 -> 27 is its share
    (folder / f"{27:038x}").write_bytes(b"")
    assert gittree.loose_objects_many(tmp_path)


def test_a_commit_that_leaves_many_loose_objects_has_git_pack_them(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setattr(gittree, "GC_AUTO", 256)  # one object in objects/17 is its share
    _git(home, "config", "gc.auto", "256")
    keys = [f"{DIR}/runs/pad-{n}.jsonl" for n in range(2)]
    for n, key in enumerate(keys):
        (home / "ledger" / key).parent.mkdir(parents=True, exist_ok=True)
        (home / "ledger" / key).write_bytes(_landing_in_17(n))
    pending.note(home / "ledger", keys)
    assert gitrepo.commit(home, 0, stale_lock_s=60).sha
    loose = home / "ledger" / ".git" / "objects" / "17"
    deadline = time.monotonic() + 60  # git gc --auto goes on in the background
    while loose.is_dir() and os.listdir(loose) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not (loose.is_dir() and os.listdir(loose))
    assert _git(home, "cat-file", "-p", f"HEAD:{keys[0]}").encode() == _landing_in_17(0)


def test_a_loose_object_a_crash_left_broken_is_written_again(home: Path) -> None:
    key = f"{DIR}/runs/tour-1-agent-01.jsonl"
    data = b'{"a run job\'s line":1}\n'
    sha = gittree.blob_sha(data).hex()
    broken = home / "ledger" / ".git" / "objects" / sha[:2] / sha[2:]
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_bytes(b"\0" * 40)  # zero-filled: the object a power loss left
    (home / "ledger" / key).parent.mkdir(parents=True, exist_ok=True)
    (home / "ledger" / key).write_bytes(data)
    pending.note(home / "ledger", [key])
    assert gitrepo.commit(home, 0, stale_lock_s=60).sha
    assert _git(home, "cat-file", "blob", f"HEAD:{key}").encode() == data
    _git(home, "fsck", "--no-dangling")
