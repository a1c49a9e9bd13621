"""A real S3-compatible server on loopback (moto's server mode) with auth switched on,
and homes holding one ended run whose files are worth archiving."""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from outerloop.compute.base import JobSpec
from outerloop.compute.local import LocalCompute
from outerloop.compute.local_records import process_alive, read_record
from outerloop.config import Settings, load_settings
from outerloop.ledger import events as ev
from outerloop.ledger import store
from outerloop.ledger.state import State
from tests.support import TARGET, make_home

pytestmark = pytest.mark.archive


@dataclass(frozen=True)
class S3:
    endpoint: str
    access_key: str
    secret_key: str
    upload_only: tuple[str, str] = ("", "")
    """A key that may upload and list but never read a tarball back."""

    def client(self, secret: str | None = None):  # type: ignore[no-untyped-def]
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=secret or self.secret_key)

    def new_bucket(self) -> str:
        name = f"arch-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    """moto on 127.0.0.1:<free port>, its auth on: only the key created here works."""
    import boto3
    import requests
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        requests.post(f"{endpoint}/moto-api/reset-auth", data=b"3", timeout=10).raise_for_status()
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="boot", aws_secret_access_key="boot")
        iam.create_user(UserName="archiver")
        iam.put_user_policy(UserName="archiver", PolicyName="all", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="archiver")["AccessKey"]
        admin = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                             aws_access_key_id=key["AccessKeyId"],
                             aws_secret_access_key=key["SecretAccessKey"])
        admin.create_user(UserName="uploader")
        admin.put_user_policy(UserName="uploader", PolicyName="no-read-back",
                              PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
                                  {"Effect": "Allow", "Action": "*", "Resource": "*"},
                                  {"Effect": "Deny", "Action": "s3:GetObject",
                                   "Resource": "arn:aws:s3:::*.tar.gz"}]}))
        upload = admin.create_access_key(UserName="uploader")["AccessKey"]
        yield S3(endpoint, key["AccessKeyId"], key["SecretAccessKey"],
                 (upload["AccessKeyId"], upload["SecretAccessKey"]))
    finally:
        server.stop()


RUN_ID = "tour-20261130T010000-agent-01"


@dataclass
class EndedRun:
    settings: Settings
    run_id: str
    bucket: str
    job_id: str

    @property
    def home(self) -> Path:
        return self.settings.home


def write_key_file(home: Path, s3: S3, secret: str | None = None,
                   key: tuple[str, str] | None = None) -> Path:
    path = home / "keys" / "archive"
    path.parent.mkdir(parents=True, exist_ok=True)
    access, secret_key = key or (s3.access_key, secret or s3.secret_key)
    path.write_text(f"access_key_id = {access}\nsecret_access_key = {secret_key}\n",
                    encoding="utf-8")
    path.chmod(0o600)
    return path


def _fill_run_dir(run_dir: Path, big_bytes: int) -> None:
    """What an ended run leaves: many small job logs and prompts, one bigger file."""
    for i in range(120):
        job = run_dir / "jobs" / f"ol-{RUN_ID}-l{i % 12}" / str(i)
        job.mkdir(parents=True, exist_ok=True)
        (job / "stdout").write_text(f"step {i}\n" * (i + 1), encoding="utf-8")
        (job / "exit_code").write_text("0\n", encoding="utf-8")
    (run_dir / "legs").mkdir()
    (run_dir / "legs" / "1.brief.md").write_text("# brief\n" * 50, encoding="utf-8")
    (run_dir / "home").mkdir()
    (run_dir / "home" / "transcript.jsonl").write_bytes(os.urandom(big_bytes))
    (run_dir / "report.md").write_text("# report\nno gain\n", encoding="utf-8")
    (run_dir / "empty-dir").mkdir()


def make_ended_run(tmp_path: Path, s3: S3, *, bwlimit: str | None = None,
                   big_bytes: int = 200_000, secret: str | None = None,
                   key: tuple[str, str] | None = None) -> EndedRun:
    bucket = s3.new_bucket()
    archive = (f"[archive]\nto = \"s3://{bucket}/outerloop\"\nendpoint = \"{s3.endpoint}\"\n"
               f"after_days = 0\ntimeout_minutes = 2\n"
               + (f"bwlimit = \"{bwlimit}\"\n" if bwlimit else ""))
    settings = make_home(tmp_path, extra_toml=archive)
    write_key_file(settings.home, s3, secret, key)
    writer = store.LedgerWriter(store.run_file(settings.home, TARGET, RUN_ID))
    writer.append(ev.RunQueued(run=RUN_ID, target=TARGET, benchmark="tour", agent="agent-01",
                               issue_title="shorter tours"))
    run_dir = settings.home / "runs" / RUN_ID
    _fill_run_dir(run_dir, big_bytes)
    compute = LocalCompute(settings.home / "jobs")
    job_id = compute.submit(JobSpec(name=f"ol-{RUN_ID}-climb", command="echo climbed",
                                    workdir=str(run_dir), log_dir=str(run_dir / "jobs" / "climb"),
                                    time_minutes=1, env={"OUTERLOOP_RUN": RUN_ID}))
    deadline = time.monotonic() + 30
    while not compute.observe([job_id])[job_id].state.terminal:
        assert time.monotonic() < deadline, "the local job never finished"
        time.sleep(0.1)
    _wait_for_runner_exit(compute, job_id, deadline)
    writer.append(ev.RunEnded(run=RUN_ID, ending="negative-result", report="no gain", by="test"))
    return EndedRun(load_settings(settings.home), RUN_ID, bucket, job_id)


def _wait_for_runner_exit(compute: LocalCompute, job_id: str, deadline: float) -> None:
    """The job's runner has written its last byte: it saves the ended record once per
    task and once more as it finishes, then leaves ``active/``. A snapshot taken between
    those writes is not the run's final bytes (seen under a loaded full suite)."""
    record = read_record(compute.job_dir(job_id))
    assert record is not None
    while ((compute.jobs_dir / "active" / job_id).exists()
           or process_alive(record.runner_pid, record.runner_identity)):
        assert time.monotonic() < deadline, "the local job's runner never exited"
        time.sleep(0.05)


def archive_over(run_id: str) -> Callable[[State], bool]:
    """The run's latest archive attempt has ended (its job is no longer live)."""
    def over(state: State) -> bool:
        run = state.runs[run_id]
        jobs = [state.jobs.get(j) for j in run.archive_jobs]
        return bool(jobs) and all(j is None or j.terminal for j in jobs) and (
            run.archive is not None or run.archive_error is not None)
    return over


def snapshot(home: Path, *tops: str) -> dict[str, str]:
    """Every regular file under ``tops`` (home-relative) with the SHA-256 of its bytes."""
    files: dict[str, str] = {}
    for top in tops:
        for path in sorted((home / top).rglob("*")):
            if path.is_file():
                files[str(path.relative_to(home))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files
