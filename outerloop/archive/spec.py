"""Where archive files live, and the archive job's spec (pure: no I/O).

Layout: the job packs into ``<home>/archive/staging/<run>/`` (outside every run
directory), logs to ``<home>/archive/jobs/<job name>/`` and uploads to
``<to>/<owner__name>/<run>/``: ``<run>.tar.gz`` and ``manifest.json``.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from outerloop.compute.base import JobSpec
from outerloop.config import Settings

ARCHIVE_DIR = "archive"
TARBALL_SUFFIX = ".tar.gz"
MANIFEST_FILE = "manifest.json"
JOB_SLACK_MINUTES = 15


def staging_dir(home: Path, run_id: str) -> Path:
    return home / ARCHIVE_DIR / "staging" / run_id


def restore_dir(home: Path, run_id: str) -> Path:
    return home / ARCHIVE_DIR / "restore" / run_id


def job_log_dir(home: Path, name: str) -> Path:
    return home / ARCHIVE_DIR / "jobs" / name


def remote_dir_name(target: str, run_id: str) -> str:
    """The run's folder under the archive root: ``owner__name/<run>``."""
    return f"{target.replace('/', '__')}/{run_id}"


def archive_job_name(run_id: str, attempt: int) -> str:
    return f"ol-{run_id}-archive-{attempt}"


def archive_spec(settings: Settings, target: str, run_id: str, attempt: int) -> JobSpec:
    """A 0-GPU job running ``outerloop archive run RUN``. No secret is in it: the job
    reads the key file itself and hands the keys to rclone through its environment."""
    name = archive_job_name(run_id, attempt)
    argv = [sys.executable, "-m", "outerloop", "archive", "run", run_id, "--target", target,
            "--home", str(settings.home)]
    return JobSpec(
        name=name, command=shlex.join(argv), workdir=str(settings.home),
        log_dir=str(job_log_dir(settings.home, name)),
        time_minutes=2 * settings.archive.timeout_minutes + JOB_SLACK_MINUTES,
        partition=settings.compute.partition, account=settings.compute.account,
        qos=settings.compute.qos, nice=settings.compute.launch_nice,
    )
