"""A secret the agent echoes reaches no saved transcript, no archive and no post.

Through real ticks: the sandbox is off (so the scripted agent can read ``keys/``), the
archive is an rclone remote defined in ``keys/rclone.conf`` (its credentials, and an
extra ``pass = ...`` value, are live secrets the kernel holds) pointing at a real S3
server (moto), and ``keys/`` holds one more key file. The agent ``cat``s them into its
transcript and stops; the run ends, its report is posted and its files are archived.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from outerloop.ledger.state import State
from tests.archive.conftest import S3, archive_over
from tests.security.test_hostile_agent import files_holding
from tests.support import ended, jobs_import_this_checkout, make_home, open_issue, tick_until

pytestmark = pytest.mark.archive

RCLONE_PASS = "RCLONEpassPLANTED0123456789"
EXTRA_KEY = "EXTRAkeyPLANTED0123456789xyz"
STEAL = "cat ../../../keys/rclone.conf ../../../keys/extra-key"
VALUES = ("sed -n 's/^pass = //p; s/^secret_access_key = //p' ../../../keys/rclone.conf; "
          "echo \"extra: $(cat ../../../keys/extra-key)\"")


def _script(path: Path) -> Path:
    legs: list[list[dict[str, Any]]] = [[
        {"shell": STEAL},
        {"shell": VALUES},
        {"shell": f"{STEAL} > \"$TMPDIR/loot.txt\"; echo '# nothing to gain' > report.md"},
        {"syscall": "stop --report report.md"},
    ]]
    path.write_text(yaml.safe_dump({"legs": legs}, sort_keys=False))
    return path


def _home(tmp_path: Path, s3: S3) -> tuple[Any, str]:
    bucket = s3.new_bucket()
    archive = (f"[archive]\nto = \"store:{bucket}/outerloop\"\n"
               f"rclone_config = \"keys/rclone.conf\"\nafter_days = 0\ntimeout_minutes = 2\n"
               f"[sandbox]\nkind = \"off\"\n")
    settings = jobs_import_this_checkout(
        make_home(tmp_path, _script(tmp_path / "echo.yaml"), extra_toml=archive))
    keys = settings.home / "keys"
    (keys / "rclone.conf").write_text(
        f"[store]\ntype = s3\nprovider = Other\naccess_key_id = {s3.access_key}\n"
        f"secret_access_key = {s3.secret_key}\nendpoint = {s3.endpoint}\n"
        f"region = us-east-1\n# an old password, still secret\npass = {RCLONE_PASS}\n")
    (keys / "extra-key").write_text(EXTRA_KEY + "\n")
    for name in ("rclone.conf", "extra-key"):
        (keys / name).chmod(0o600)
    return settings, bucket


def _tarball_holding(s3: S3, bucket: str, needles: tuple[str, ...]) -> list[str]:
    client = s3.client()
    found: list[str] = []
    for item in client.list_objects_v2(Bucket=bucket)["Contents"]:
        body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        if any(n.encode() in body for n in needles):
            found.append(item["Key"])
        if not item["Key"].endswith(".tar.gz"):
            continue
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
            for member in tar.getmembers():
                handle = tar.extractfile(member) if member.isreg() else None
                data = handle.read() if handle else b""
                if any(n.encode() in data for n in needles):
                    found.append(member.name)
    return found


@pytest.mark.e2e
def test_echoed_rclone_password_and_key_files_reach_no_legs_archive_or_post_when_stolen(
        tmp_path: Path, s3: S3) -> None:
    settings, bucket = _home(tmp_path, s3)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state: State = tick_until(settings, ended, timeout_s=180)
    (run,) = state.runs.values()
    home = settings.home
    needles = (RCLONE_PASS, EXTRA_KEY, s3.secret_key)
    loot = (home / "runs" / run.run_id / "home" / "tmp" / "loot.txt").read_text()
    assert all(n in loot for n in needles)  # the agent did read them
    legs = home / "runs" / run.run_id / "legs"
    transcripts = sorted(legs.glob("*-transcript.jsonl"))
    assert transcripts and "[REDACTED]" in transcripts[0].read_text()
    assert files_holding(legs, needles) == []
    tick_until(settings, archive_over(run.run_id), timeout_s=180)
    archived = tick_until(settings, lambda s: s.runs[run.run_id].report_posted, timeout_s=60)
    assert archived.runs[run.run_id].archive is not None, archived.runs[run.run_id].archive_error
    assert _tarball_holding(s3, bucket, needles) == []
    for part in ("forge", "ledger", "cache", "board"):
        assert files_holding(home / part, needles) == [], part
