"""Prune a settled run's ``jobs/`` dirs when no archive is configured (housekeeping)."""

from __future__ import annotations

import os
from pathlib import Path

from outerloop.archive.pack import local_job_dirs, remove_tree
from outerloop.run.paths import RunPaths


def tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


def prune_job_dirs(home: Path, run_id: str) -> int:
    """Remove ``runs/<run>/jobs/`` and the run's local compute records; idempotent.
    Returns the bytes freed."""
    dirs = [RunPaths.of(home, run_id).root / "jobs", *local_job_dirs(home, run_id)]
    freed = 0
    for path in dirs:
        if path.exists():
            freed += tree_bytes(path)
            remove_tree(path)
    return freed
