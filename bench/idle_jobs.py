"""Memory held by waiting local jobs (issue 27: idle jobs hold no interpreter).

Builds a home with local compute, submits one blocker (a launch-like ``sleep``) and
``N`` wake legs after it exactly as ``attempt/exits.park_on`` does
(``run.jobs.attempt_spec(..., after_any=(blocker,))`` through ``make_compute``), waits
until every one of them is waiting on its dependency, and prints what each waiting
job's processes (its runner pid and every descendant) hold: PSS from
``/proc/<pid>/smaps_rollup`` (shared pages split between the processes sharing them,
so the sum is what the jobs cost the machine) and RSS, with the process names.
Target: ``N = 40`` waiting jobs hold <= 200 MB PSS in all. Nothing asserts.

It measures twice: ``before``, each job started as it was until issue 27 (its Python
runner at once, waiting in ``_wait_to_start``: this process starts jobs with
``local_gate.gate_argv`` answering None), and ``after``, as ``submit`` starts them now
(the bash gate, ``compute/local_gate.sh``).

    python bench/idle_jobs.py [N]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
JOBS = 40
TARGET_TOTAL_MB = 200.0
SETTLE_S = 2.0
WAIT_S = 300.0


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _tree(pid: int, children: dict[int, list[int]]) -> list[int]:
    out, todo = [], [pid]
    while todo:
        here = todo.pop()
        out.append(here)
        todo.extend(children.get(here, []))
    return out


def _memory_kb(pid: int) -> tuple[int, int]:
    """(PSS, RSS) in kB, or zeros for a process that is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    fields = {line.split(":")[0]: line.split()[1] for line in text.splitlines()[1:]
              if ":" in line}
    return int(fields.get("Pss", 0)), int(fields.get("Rss", 0))


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def measure(count: int, label: str) -> bool:
    from outerloop.compute.base import JobSpec, JobState
    from outerloop.compute.factory import make_compute
    from outerloop.compute.local import LocalCompute
    from outerloop.compute.local_records import RUNNER_PID_FILE
    from outerloop.run import jobs
    from tests.support import jobs_import_this_checkout, make_home

    with tempfile.TemporaryDirectory(prefix="idle-jobs-") as tmp:
        settings = jobs_import_this_checkout(make_home(Path(tmp)))
        compute = make_compute(settings)
        assert isinstance(compute, LocalCompute)
        blocker = compute.submit(JobSpec(
            name="ol-bench-launch", command="sleep 600", workdir=tmp,
            log_dir=str(Path(tmp) / "launch"), time_minutes=30))
        ids = [compute.submit(jobs.attempt_spec(
            settings, f"r{i:03d}", "wake", jobs.job_name(f"r{i:03d}", "wake", 60), 30,
            after_any=(blocker,))) for i in range(count)]
        try:
            deadline = time.monotonic() + WAIT_S
            while True:
                seen = compute.observe(ids)
                if all(o.state == JobState.PENDING and o.reason == "Dependency"
                       for o in seen.values()):
                    break
                if time.monotonic() > deadline:
                    print(f"{label}: not all {count} jobs were waiting after {WAIT_S:.0f} s")
                    return False
                time.sleep(0.2)
            time.sleep(SETTLE_S)
            children = _children()
            pss = rss = 0
            per_job: list[int] = []
            names: Counter[str] = Counter()
            for job_id in ids:
                pid = int((compute.job_dir(job_id) / RUNNER_PID_FILE)
                          .read_text().split()[0])
                job_pss = 0
                for member in _tree(pid, children):
                    p, r = _memory_kb(member)
                    job_pss += p
                    rss += r
                    names[_name(member)] += 1
                pss += job_pss
                per_job.append(job_pss)
        finally:
            for job_id in [*ids, blocker]:
                compute.cancel(job_id)
            deadline = time.monotonic() + WAIT_S
            while compute.queue() and time.monotonic() < deadline:
                time.sleep(0.2)
    processes = ", ".join(f"{n} x{c}" for n, c in sorted(names.items()))
    total_mb = pss / 1024
    print(f"{label}: {count} waiting local jobs: processes {processes}")
    print(f"{label}: {count} waiting local jobs: PSS {total_mb:.1f} MB in all "
          f"(target <= {TARGET_TOTAL_MB:.0f} MB: "
          f"{'met' if total_mb <= TARGET_TOTAL_MB else 'missed'}), "
          f"RSS {rss / 1024:.1f} MB in all")
    print(f"{label}: per waiting job: PSS mean {pss / count / 1024:.2f} MB, "
          f"max {max(per_job) / 1024:.2f} MB (target <= 5 MB)")
    return True


def main() -> int:
    from outerloop.compute import local_gate

    count = int(sys.argv[1]) if len(sys.argv) > 1 else JOBS
    gate_argv = local_gate.gate_argv
    local_gate.gate_argv = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        before = measure(count, "before (a Python runner per job)")
    finally:
        local_gate.gate_argv = gate_argv  # type: ignore[assignment]
    after = measure(count, "after (a bash gate per job)")
    return 0 if before and after else 1


if __name__ == "__main__":
    raise SystemExit(main())
