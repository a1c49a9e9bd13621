"""Disk use per finished run, and what housekeeping and the archive leave of it.

Runs one real research run of the demo target (scripted agent, local compute) through
real ticks to its PR, merges it as the maintainer and ticks to the run's end, then
prints the run's bytes and files by part (``runs/<run>/`` entries and local compute's
``jobs/<id>/`` records of its jobs), what remains
after the 24 h workspace clean, after pruning its jobs/ dirs (no archive configured),
and the size of the archive tarball (the archive job deletes everything local once
the upload is verified). Nothing asserts.

    python bench/disk_per_run.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _usage(path: Path) -> tuple[int, int]:
    if not path.is_dir():
        return (path.lstat().st_size, 1) if path.exists() else (0, 0)
    files = size = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
            files += 1
    return size, files


def _line(label: str, size: int, files: int) -> str:
    return f"  {label:<34} {size / 1e6:8.2f} MB {files:6d} files"


def main() -> None:
    from outerloop.archive.pack import local_job_dirs, pack
    from outerloop.archive.prune import prune_job_dirs
    from outerloop.run.workspace import clean_workspace
    from tests.support import ended, forge, in_review, make_home, open_issue, tick_until

    with tempfile.TemporaryDirectory() as scratch:
        settings = make_home(Path(scratch))
        open_issue(settings, "Shorter tours", "Please try local search on tour.")
        started = time.monotonic()
        state = tick_until(settings, in_review, timeout_s=600)
        (run,) = state.runs.values()
        assert run.pr_number is not None
        forge(settings).merge_pr(run.target, run.pr_number)  # the maintainer merges
        state = tick_until(settings, ended, timeout_s=600)
        (run,) = state.runs.values()
        home = settings.home
        root = home / "runs" / run.run_id
        print(f"one run of the demo target ({run.ending}, {time.monotonic() - started:.0f} s):")
        total_size, total_files = _usage(root)
        for part in sorted(p for p in root.iterdir()):
            print(_line(f"runs/<run>/{part.name}", *_usage(part)))
        job_dirs = local_job_dirs(home, run.run_id)
        jobs_size = sum(_usage(p)[0] for p in job_dirs)
        jobs_files = sum(_usage(p)[1] for p in job_dirs)
        print(_line(f"jobs/<id> (local compute, {len(job_dirs)} jobs)", jobs_size, jobs_files))
        print(_line("total", total_size + jobs_size, total_files + jobs_files))
        clean_workspace(home, run.run_id)
        after_clean = _usage(root)
        print(_line("after the 24 h workspace clean", after_clean[0] + jobs_size,
                    after_clean[1] + jobs_files))
        packed = pack(home, run.run_id, run.target, Path(scratch) / "staging")
        print(_line("archive tarball (gzip) + manifest",
                    packed.tarball.stat().st_size + packed.manifest.stat().st_size, 2))
        prune_job_dirs(home, run.run_id)
        print(_line("after pruning jobs/ (no archive)", *_usage(root)))
        print("  after a verified archive: 0 MB locally (runs/<run> and its jobs/ removed)")


if __name__ == "__main__":
    main()
