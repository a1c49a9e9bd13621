"""Slurm commands per tick: 1, 10 and 50 runs parked on their jobs, on the real Slurm.

Each parked run waits on three launch jobs and one wake job (``afterany`` on them), all
real jobs held pending (``--begin`` an hour away), so nothing changes state while we
count. Every Slurm command the tick runs (``outerloop tick`` as a process) is counted
through wrapper scripts put first on PATH, which log their name and exec the real
tool. Prints the counts side by side: they must not grow with the number of runs,
and be <= 2 (one squeue, one sacct) when no job changed state. Nothing asserts.

    sudo bash deploy/local-slurm/start.sh; set -a; . /run/local-slurm/env; set +a
    python bench/slurm_calls.py
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from outerloop.compute.base import JobSpec
from outerloop.kernel.actions import SubmitJob, intent_for
from outerloop.ledger import events as ev
from outerloop.ledger.events import EffectResult

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RUN_COUNTS = (1, 10, 50)
LAUNCHES_PER_RUN = 3
TARGET = "demo/tinytsp"
TOOLS = ("squeue", "sacct", "sbatch", "scancel", "sinfo", "scontrol", "srun")


def wrappers(folder: Path, log: Path) -> None:
    """``squeue`` etc. that append their name to ``log`` then exec the real tool."""
    folder.mkdir()
    for tool in TOOLS:
        real = shutil.which(tool)
        if real is None:
            continue
        (folder / tool).write_text(f'#!/bin/sh\necho {tool} >> "{log}"\nexec {real} "$@"\n')
        (folder / tool).chmod(0o755)


def submit_held(count: int, scratch: Path) -> list[str]:
    """``count`` real jobs that stay pending (begin time an hour away)."""
    from outerloop.compute.base import JobSpec
    from outerloop.compute.slurm import SlurmCompute
    from outerloop.config import ComputeSettings

    slurm = SlurmCompute(ComputeSettings(kind="slurm"))
    return [slurm.submit(JobSpec(name=f"bench-held-{i}", command="true", workdir=str(scratch),
                                 log_dir=str(scratch / "held" / str(i)), time_minutes=1,
                                 begin="now+3600"))
            for i in range(count)]


def parked_home(root: Path, runs: int, job_ids: list[str]) -> Path:
    """A home whose ledger holds ``runs`` runs parked on ``job_ids`` (4 per run)."""
    from outerloop.forge.local import LocalForge
    from outerloop.home import init_home
    from outerloop.ledger.book import LedgerWriter, tick_file

    home = root / f"home-{runs}"
    settings = init_home(home, forge="local", compute="slurm", harness="scripted",
                         targets=[TARGET], script=str(REPO / "examples/agents/tinytsp-2opt.yaml"))
    LocalForge(home / "forge", settings.forge.login).import_repo(REPO / "examples/tinytsp",
                                                                 TARGET)
    ledger = LedgerWriter(tick_file(home, TARGET))
    jobs = iter(job_ids)
    for n in range(runs):
        run = f"tour-{n:04d}-agent-01"
        ledger.append(ev.RunQueued(run=run, target=TARGET, benchmark="tour",
                                   agent="agent-01", hypothesis="bench"))

        def submitted(purpose: str, name: str, job_id: str, run: str = run) -> str:
            key = f"job:{name}"
            spec = JobSpec(name=name, command="true", workdir=str(home), log_dir=str(home),
                           time_minutes=5)
            ledger.append(intent_for(SubmitJob(target=TARGET, run=run, purpose=purpose,
                                               spec=spec)))
            ledger.append(ev.Done(run=run, key=key, result=EffectResult(job_id=job_id)))
            return job_id

        climb = submitted("climb", f"ol-{run}-climb", str(9_000_000 + n))
        ledger.append(ev.JobEnded(run=run, job_id=climb, state="completed", exit_code=0))
        ledger.append(ev.LegStarted(run=run, leg=1, role="climb", job_id=climb))
        launches = [submitted("launch", f"ol-{run}-x{k}", next(jobs))
                    for k in range(LAUNCHES_PER_RUN)]
        wake = submitted("wake", f"ol-{run}-wake-1", next(jobs))
        ledger.append(ev.LegEnded(run=run, leg=1, stop_reason="end_turn", session_id="s",
                                  request={"verb": "sleep", "launches": [], "submit": None,
                               "messages": []}))
        ledger.append(ev.Parked(run=run, reason="jobs", job_ids=launches, wake_job=wake))
    return home


def count_tick(home: Path, env: dict[str, str], log: Path) -> collections.Counter[str]:
    log.write_text("")
    done = subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home", str(home)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"tick failed: {done.stderr[-2000:]}")
    return collections.Counter(log.read_text().split())


def main() -> None:
    if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
        raise SystemExit("needs the local Slurm: sudo bash deploy/local-slurm/start.sh; "
                         "set -a; . /run/local-slurm/env; set +a")
    root = Path(tempfile.mkdtemp(prefix="outerloop-slurm-bench-"))
    log = root / "calls.log"
    wrappers(root / "bin", log)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(root / "bin"), env["PATH"]])
    env["PYTHONPATH"] = str(REPO)
    per_run = LAUNCHES_PER_RUN + 1
    held = submit_held(max(RUN_COUNTS) * per_run, root)
    rows = []
    try:
        for runs in RUN_COUNTS:
            home = parked_home(root, runs, held[:runs * per_run])
            first = count_tick(home, env, log)
            quiet = count_tick(home, env, log)
            rows.append((runs, runs * per_run, first, quiet))
    finally:
        subprocess.run(["scancel", *held], check=False)
    print(f"{'parked runs':>12} {'live jobs':>10} {'1st tick':>9} {'next tick':>10}  "
          f"next tick by command")
    for runs, jobs, first, quiet in rows:
        detail = ", ".join(f"{k} {v}" for k, v in sorted(quiet.items())) or "-"
        print(f"{runs:>12} {jobs:>10} {sum(first.values()):>9} {sum(quiet.values()):>10}  "
              f"{detail}")
    same = len({sum(q.values()) for *_, q in rows}) == 1
    print(f"calls per tick independent of the number of runs: {'yes' if same else 'NO'}; "
          f"budget <= 2 when no job changed state")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
