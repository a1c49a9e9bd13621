"""``python -m outerloop.compute.runner_main --jobs-dir DIR [--signalled] ID``: the way
``LocalCompute.submit`` and the job's gate (``local_gate.sh``) start a local job's
runner, without the command line's modules.

Every local job starts one runner; through ``outerloop job run`` (click, the
configuration and the command's module) that cost ~0.37 s of CPU per job, here ~0.31 s
(measured on the 2-core machine; most of what is left is pydantic, which the job's
spec and record models need). The argv is the
kernel's own (never a person's), so a malformed one is a bug: it says so and exits 2.
``outerloop job run`` stays, for a runner started by an older version.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

USAGE = "usage: python -m outerloop.compute.runner_main --jobs-dir DIR [--signalled] JOB_ID"


def parse(words: Sequence[str]) -> tuple[Path, str, bool] | None:
    """``(jobs_dir, job_id, signalled)`` from the words after the module's name
    (``local_gate.runner_argv`` and ``local_gate.sh`` write them)."""
    rest = list(words)
    if len(rest) < 3 or rest[0] != "--jobs-dir":
        return None
    jobs_dir, rest = Path(rest[1]), rest[2:]
    signalled = bool(rest) and rest[0] == "--signalled"
    rest = rest[1:] if signalled else rest
    return (jobs_dir, rest[0], signalled) if len(rest) == 1 else None


def main(words: Sequence[str]) -> int:
    parsed = parse(words)
    if parsed is None:
        print(USAGE, file=sys.stderr)
        return 2
    from outerloop.compute.local_runner import run_job

    jobs_dir, job_id, signalled = parsed
    try:
        return run_job(jobs_dir, job_id, signalled=signalled)
    except ValueError as exc:  # a job id that is not one
        print(f"outerloop job runner: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
