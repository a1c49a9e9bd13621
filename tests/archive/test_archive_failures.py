"""What goes wrong on the way to the archive deletes nothing and is retried."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from outerloop.archive.spec import staging_dir
from outerloop.kernel.tick import run_tick
from tests.archive.conftest import S3, archive_over, make_ended_run, snapshot
from tests.support import state_of, tick_until

pytestmark = pytest.mark.archive


def _rclone_copy(staging_marker: str) -> tuple[int, str] | None:
    """The pid and command line of a running ``rclone copy`` of ``staging_marker``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [w.decode(errors="replace") for w in argv if w]
        if len(words) > 2 and words[0].endswith("rclone") and words[1] == "copy" and \
                staging_marker in words[2]:
            return int(entry.name), " ".join(words)
    return None


def test_upload_killed_half_way_deletes_nothing_and_succeeds_next_tick(
        tmp_path: Path, s3: S3) -> None:
    ended = make_ended_run(tmp_path, s3, bwlimit="1M", big_bytes=4 * 1024 * 1024)
    home, run_id = ended.home, ended.run_id
    tops = (f"runs/{run_id}", f"jobs/{ended.job_id}")
    before = snapshot(home, *tops)

    run_tick(ended.settings)
    assert len(state_of(ended.settings).runs[run_id].archive_jobs) == 1
    deadline = time.monotonic() + 60
    # This home's own staging path: other workers' archive tests upload the same run id.
    while (found := _rclone_copy(str(staging_dir(home, run_id)))) is None:
        assert time.monotonic() < deadline, "the archive job never started uploading"
        time.sleep(0.05)
    pid, cmdline = found
    assert s3.secret_key not in cmdline and s3.access_key not in cmdline
    time.sleep(1.5)  # about a third of the bytes are out
    os.killpg(os.getpgid(pid), signal.SIGKILL)

    first = state_of(ended.settings).runs[run_id].archive_jobs[0]
    state = tick_until(ended.settings, lambda s: first not in s.jobs or s.jobs[first].terminal,
                       timeout_s=60)
    run = state.runs[run_id]
    assert run.archive is None
    assert snapshot(home, *tops) == before

    state = tick_until(ended.settings, archive_over(run_id), timeout_s=120)
    assert state.runs[run_id].archive is not None
    assert len(state.runs[run_id].archive_jobs) == 2
    assert not (home / "runs" / run_id).exists()


def test_wrong_credentials_give_a_clear_error_and_delete_nothing(
        tmp_path: Path, s3: S3) -> None:
    wrong = "x" * 40
    ended = make_ended_run(tmp_path, s3, secret=wrong)
    home, run_id = ended.home, ended.run_id
    tops = (f"runs/{run_id}", f"jobs/{ended.job_id}")
    before = snapshot(home, *tops)

    state = tick_until(ended.settings, archive_over(run_id), timeout_s=120)
    error = state.runs[run_id].archive_error or ""
    assert "refused the credentials" in error and "keys/archive" in error
    assert state.runs[run_id].archive is None
    assert snapshot(home, *tops) == before
    leaks = [str(p) for p in home.rglob("*") if p.is_file() and p.name != "archive"
             and wrong.encode() in p.read_bytes()]
    assert leaks == []

    run_tick(ended.settings)  # retried: a second attempt, still nothing deleted
    assert len(state_of(ended.settings).runs[run_id].archive_jobs) >= 2
    assert snapshot(home, *tops) == before


def test_nothing_is_deleted_when_the_upload_cannot_be_read_back(tmp_path: Path, s3: S3) -> None:
    """The copy succeeds, but the key may not read the tarball back: unproven, kept."""
    ended = make_ended_run(tmp_path, s3, key=s3.upload_only)
    home, run_id = ended.home, ended.run_id
    tops = (f"runs/{run_id}", f"jobs/{ended.job_id}")
    before = snapshot(home, *tops)

    state = tick_until(ended.settings, archive_over(run_id), timeout_s=120)
    assert "verifying" in (state.runs[run_id].archive_error or "")
    assert state.runs[run_id].archive is None
    keys = {o["Key"] for o in s3.client().list_objects_v2(Bucket=ended.bucket)["Contents"]}
    assert f"outerloop/demo__tinytsp/{run_id}/{run_id}.tar.gz" in keys  # it was uploaded
    assert snapshot(home, *tops) == before


def test_a_missing_key_file_is_recorded_as_the_reason_when_archiving(
        tmp_path: Path, s3: S3) -> None:
    ended = make_ended_run(tmp_path, s3)
    (ended.home / "keys" / "archive").unlink()
    state = tick_until(ended.settings, archive_over(ended.run_id), timeout_s=120)
    error = state.runs[ended.run_id].archive_error or ""
    assert "keys/archive does not exist" in error and "chmod 600" in error
    assert (ended.home / "runs" / ended.run_id / "report.md").exists()


def test_a_run_that_left_no_files_is_archived_as_empty_once_when_due(
        tmp_path: Path, s3: S3) -> None:
    import shutil
    import subprocess
    import sys

    ended = make_ended_run(tmp_path, s3)
    shutil.rmtree(ended.home / "runs" / ended.run_id)
    shutil.rmtree(ended.home / "jobs" / ended.job_id)
    state = tick_until(ended.settings, archive_over(ended.run_id), timeout_s=120)
    archived = state.runs[ended.run_id].archive
    assert archived is not None and (archived.files, archived.local_files) == ([], 0)
    run_tick(ended.settings)
    assert len(state_of(ended.settings).runs[ended.run_id].archive_jobs) == 1
    restore = subprocess.run([sys.executable, "-m", "outerloop", "archive", "restore",
                              ended.run_id, "--home", str(ended.home)],
                             capture_output=True, text=True, timeout=120)
    assert restore.returncode == 1 and "left no files" in restore.stderr
