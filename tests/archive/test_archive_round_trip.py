"""Archive -> verify -> delete -> restore against a real S3 server (moto, loopback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.archive.job import verify
from outerloop.archive.pack import pack
from outerloop.archive.rclone import ArchiveMismatch, Rclone
from outerloop.archive.remote import rclone_binary, remote_of
from outerloop.archive.spec import staging_dir
from tests.archive.conftest import S3, archive_over, make_ended_run, snapshot
from tests.support import TARGET, state_of, tick_until

pytestmark = pytest.mark.archive


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "archive", *args, "--home",
                           str(home)], capture_output=True, text=True, timeout=300)


def test_run_comes_back_byte_identical_when_archived_then_restored(
        tmp_path: Path, s3: S3) -> None:
    ended = make_ended_run(tmp_path, s3)
    home, run_id = ended.home, ended.run_id
    tops = (f"runs/{run_id}", f"jobs/{ended.job_id}")
    before = snapshot(home, *tops)
    assert len(before) > 250

    state = tick_until(ended.settings, archive_over(run_id), timeout_s=120)
    run = state.runs[run_id]
    assert run.archive_error is None and run.archive is not None
    where = f"s3://{ended.bucket}/outerloop/demo__tinytsp/{run_id}/"
    assert run.archive.where == where
    assert sorted(f.name for f in run.archive.files) == ["manifest.json",
                                                                f"{run_id}.tar.gz"]
    assert not (home / "runs" / run_id).exists()
    assert not (home / "jobs" / ended.job_id).exists()
    assert not staging_dir(home, run_id).exists()
    objects = s3.client().list_objects_v2(Bucket=ended.bucket)["Contents"]
    assert {o["Key"] for o in objects} == {f"outerloop/demo__tinytsp/{run_id}/manifest.json",
                                           f"outerloop/demo__tinytsp/{run_id}/{run_id}.tar.gz"}

    listed = _cli(home, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["runs"]
    assert row["run"] == run_id and row["where"] == where and row["local"] is False
    text = _cli(home, "list").stdout
    assert run_id in text and where in text and "local copy present" not in text

    restored = _cli(home, "restore", run_id)
    assert restored.returncode == 0, restored.stderr
    assert snapshot(home, *tops) == before
    assert (home / "runs" / run_id / "empty-dir").is_dir()
    assert state_of(ended.settings).runs[run_id].restored_at is not None

    leaks = [str(f) for f in home.rglob("*") if f.is_file() and f != home / "keys" / "archive"
             and s3.secret_key.encode() in f.read_bytes()]
    assert leaks == []  # the key is in no log, ledger line, job file or run directory

    again = _cli(home, "restore", run_id)
    assert again.returncode == 1 and "already exist" in again.stderr
    assert snapshot(home, *tops) == before


def test_size_mismatch_is_detected_when_the_stored_object_is_shorter(
        tmp_path: Path, s3: S3) -> None:
    ended = make_ended_run(tmp_path, s3)
    settings, run_id = ended.settings, ended.run_id
    remote = remote_of(settings)
    rclone = Rclone(rclone_binary(settings), remote, 120.0)
    staging = staging_dir(settings.home, run_id)
    pack(settings.home, run_id, TARGET, staging)
    destination = remote.run_path(TARGET, run_id)
    rclone.run("copy", str(staging), destination, what="uploading")
    assert len(verify(rclone, staging, destination)) == 2

    key = f"outerloop/demo__tinytsp/{run_id}/{run_id}.tar.gz"
    client = s3.client()
    body = client.get_object(Bucket=ended.bucket, Key=key)["Body"].read()
    client.put_object(Bucket=ended.bucket, Key=key, Body=body[:-100])
    with pytest.raises(ArchiveMismatch, match="differ") as caught:
        verify(rclone, staging, destination)
    assert "nothing local was deleted" in str(caught.value)

    client.put_object(Bucket=ended.bucket, Key=key, Body=body[:-1] + bytes([body[-1] ^ 1]))
    with pytest.raises(ArchiveMismatch, match="differ"):
        verify(rclone, staging, destination)
    assert (settings.home / "runs" / run_id / "report.md").exists()


def test_doctor_checks_the_archive_when_one_is_configured(tmp_path: Path, s3: S3) -> None:
    from outerloop.doctor.archive import check_archive
    from tests.archive.conftest import write_key_file

    ended = make_ended_run(tmp_path, s3)
    assert check_archive(ended.settings)[0].ok
    write_key_file(ended.home, s3, secret="y" * 40)
    [failed] = check_archive(ended.settings)
    assert not failed.ok and "refused the credentials" in failed.detail
    assert "y" * 40 not in failed.detail + failed.fix
