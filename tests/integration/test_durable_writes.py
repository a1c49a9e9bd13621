"""What a tick records survives a machine crash: names of new ledger files, the ledger's
git commit, the local forge's rows (``docs/operate.md``, "What a machine crash can and
cannot lose")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from outerloop.kernel.tick import run_tick
from outerloop.ledger.book import tick_file
from outerloop.ledger.gitrepo import CORE_FSYNC_SINCE, git_version
from tests.support import TARGET, forge, make_home, open_issue


def test_tick_fsyncs_a_new_ledger_file_into_its_directories_when_it_creates_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Faster please", "Make it all faster.")
    path = tick_file(settings.home, TARGET)
    created = [d for d in (path.parent, path.parent.parent) if not d.exists()]
    assert created == [path.parent]  # the target's directory is new too
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        real_fsync(fd)
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(os, "fsync", recording_fsync)
    assert run_tick(settings).events and path.exists()
    assert str(path) in synced
    assert str(path.parent) in synced[synced.index(str(path)):]  # after the line itself
    for directory in created:  # each new directory's entry, in its parent
        assert str(directory.parent) in synced


@pytest.mark.skipif(git_version() < CORE_FSYNC_SINCE, reason="git without core.fsync")
def test_ledger_commit_is_flushed_to_disk_when_a_tick_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Faster please", "Make it all faster.")
    trace = tmp_path / "trace2.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert run_tick(settings).commit is not None
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    commands = {e["sid"]: e["argv"] for e in events if e["event"] == "start"}
    flushed = {" ".join(commands[e["sid"]]): int(e["value"]) for e in events
               if e.get("category") == "fsync" and e.get("key") == "fsync/hardware-flush"}
    (commit,) = [argv for argv in flushed if " commit " in argv]
    (add,) = [argv for argv in flushed if " add -A " in argv]
    assert flushed[commit] >= 3 and flushed[add] >= 1  # objects, ref, index


def test_local_forge_database_syncs_each_commit_when_it_is_written(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    store = forge(settings).store
    with store.write() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
