"""Slurm: the commands and their versions, accounting, process tracking, and the
kernel's and sessions' placements (partition, account, qos, constraint) accepted by
``sbatch --test-only``; launches and evals are placed per benchmark
(``doctor/benchmarks.py``) with the request each really makes."""

from __future__ import annotations

from outerloop.compute import jobenv
from outerloop.compute.base import JobSpec
from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, last_words, ok, run, warn
from outerloop.doctor.partitions import partitions
from outerloop.kinds import JobKind

COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "sinfo")
GPU_KINDS: tuple[JobKind, ...] = ("launch", "eval")
CPU_KINDS: tuple[JobKind, ...] = ("kernel", "session")
"""Probed here; launches and evals are probed per benchmark with what each asks
(``doctor/benchmarks.py``)."""


def check_slurm(settings: Settings) -> list[Check]:
    if settings.compute.kind != "slurm":
        return [ok("slurm", "not used ([compute] kind is local)")]
    results = _commands()
    if any(not r.ok for r in results):
        return results
    results.append(_accounting())
    results.append(proctrack_check())
    results.extend(check_kind_placements(settings, CPU_KINDS))
    return results


def _commands() -> list[Check]:
    results = []
    for command in COMMANDS:
        done = run([command, "--version"])
        if done is None or done.returncode != 0:
            results.append(fail(f"slurm {command}", "not found on PATH" if done is None
                                else last_words(done),
                                "load Slurm's client tools (module load slurm) in the "
                                "environment that runs outerloop, cron's PATH included"))
        else:
            results.append(ok(f"slurm {command}", done.stdout.strip()))
    return results


def _accounting() -> Check:
    done = run(["sacct", "-n", "-X", "-P", "-S", "now-1hours", "-o", "JobID,AllocTRES"])
    if done is None or done.returncode != 0:
        return fail("slurm accounting", "sacct does not answer: "
                    + (last_words(done) if done else "not found"),
                    "outerloop decides how jobs ended from accounting; ask the admins to "
                    "enable slurmdbd (AccountingStorageType=accounting_storage/slurmdbd)")
    return ok("slurm accounting", "sacct answers (AllocTRES readable)")


PROCTRACK_CGROUP = "proctrack/cgroup"
PROCTRACK_FIX = ("ask the admins to set ProctrackType=proctrack/cgroup (with cgroup.conf) in "
                 "slurm.conf: then Slurm kills every process of a job when it ends, setsid'd "
                 "ones included; until then outerloop's own reapers are the only cleanup, and a "
                 "sandbox wrapper SIGKILLed at a time limit can leave a daemon behind")


def proctrack_check() -> Check:
    """Whether Slurm itself ends a job's every process. ``proctrack/cgroup`` puts a
    job in a cgroup and kills the cgroup at job end, ``setsid`` or double-forked
    processes included; ``proctrack/linuxproc`` finds a job's processes by parent
    links (an orphan reparented to PID 1 is lost) and ``proctrack/pgid`` by process
    group (``setsid`` leaves it). Either still works, with outerloop's reapers doing
    the cleanup, so it is a warning."""
    done = run(["scontrol", "show", "config"])
    if done is None or done.returncode != 0:
        return warn("slurm process tracking", "scontrol show config does not answer: "
                    + (last_words(done) if done else "scontrol not found"), PROCTRACK_FIX)
    config = parse_config(done.stdout)
    proctrack = config.get("ProctrackType", "(not shown)")
    task = config.get("TaskPlugin", "(not shown)")
    if proctrack != PROCTRACK_CGROUP:
        return warn("slurm process tracking",
                    f"ProctrackType={proctrack} (TaskPlugin={task}): Slurm does not kill a "
                    f"job's processes that left its process tree (setsid, double fork)",
                    PROCTRACK_FIX)
    return ok("slurm process tracking", f"ProctrackType={proctrack} (TaskPlugin={task}): "
              f"every process of a job ends with it")


def parse_config(text: str) -> dict[str, str]:
    """``Key = value`` lines of ``scontrol show config`` as a dict (first wins)."""
    config: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            config.setdefault(key.strip(), value.strip())
    return config


def asked_minutes(kind: JobKind) -> int:
    """The time limit the kernel asks for a job of ``kind`` before its placement's cap:
    the resident chain's default walltime (``outerloop start --mode resident``), a
    climb or wake job's default limit; launches and evals are probed per benchmark
    with theirs (``doctor/benchmarks.py``), here with a minute."""
    from outerloop.kernel.start import RESIDENT_WALLTIME_MINUTES
    from outerloop.limits import ATTEMPT_JOB_MINUTES

    return {"kernel": RESIDENT_WALLTIME_MINUTES, "session": ATTEMPT_JOB_MINUTES}.get(kind, 1)


TIME_FIXES = {
    "kernel": "a shorter chain job: `outerloop start --mode resident --walltime-minutes N` "
              "(N at most the partition's MaxTime), or [compute.kernel] time_minutes = N",
    "session": "[compute.session] partition = one whose MaxTime holds the climb and wake "
               "jobs (budgets.attempt_job_minutes, 120 by default; never a cap below the "
               "session floor, which the 'time caps' check fails)",
}
"""What to change when a partition's time limit refuses the job a kind asks for."""


def _probe_spec(settings: Settings, kind: JobKind, gpus: int) -> JobSpec:
    spec = JobSpec(name=f"outerloop-doctor-{kind}", command="true", workdir=str(settings.home),
                   log_dir=str(settings.home), time_minutes=asked_minutes(kind), gpus=gpus)
    placed = jobenv.place(spec, settings.compute, kind)
    return jobenv.with_operator_settings(placed, settings.compute, {})


NOT_PLACEMENT = ("sbatch", "--parsable", "--job-name=", "--chdir=", "--output=",
                 "--open-mode=", "--export=", "--requeue", "--no-requeue", "--nice=",
                 "--dependency=", "--array=", "--begin=")
"""The ``sbatch_argv`` words that say nothing about where a job may run."""


def _minutes(flags: list[str]) -> str:
    """``720 min``: the ``--time`` of ``flags`` as asked."""
    asked = next((f.split("=", 1)[1] for f in flags if f.startswith("--time=")), "?")
    return f"{asked} min" if asked.isdigit() else asked


def request_flags(spec: JobSpec) -> list[str]:
    """The sbatch options of ``spec`` that place it (time, tasks, CPUs, memory, GPUs,
    nodes, partition, account, qos, constraint, extra options), exactly as the job
    would be submitted (``jobscript.sbatch_argv``)."""
    from pathlib import Path

    from outerloop.compute.jobscript import sbatch_argv

    argv = sbatch_argv(spec, Path("job.sbatch"))[:-1]
    return [word for word in argv if not word.startswith(NOT_PLACEMENT)]


def sbatch_test_only(flags: list[str]) -> str | None:
    """None when ``sbatch --test-only`` accepts ``flags``, else Slurm's words."""
    done = run(["sbatch", "--test-only", *flags, "--wrap=true"])
    if done is None:
        return "sbatch not found"
    return None if done.returncode == 0 else last_words(done)


def shown(flags: list[str]) -> str:
    """The flags a reader cares about (time, tasks and CPUs are always there)."""
    kept = [f for f in flags if not f.startswith(("--time=", "--ntasks", "--cpus-per-task="))]
    return " ".join(kept) or "the cluster's defaults"


def _has_gpus(settings: Settings, partition: str | None) -> bool:
    argv = ["sinfo", "-h", "-o", "%G"] + (["-p", partition] if partition else [])
    done = run(argv)
    return done is not None and done.returncode == 0 and "gpu" in done.stdout


def check_kind_placements(settings: Settings, kinds: tuple[JobKind, ...]) -> list[Check]:
    """One ``sbatch --test-only`` per distinct placement of ``kinds`` (with a 1-GPU
    request for launches and evals where the partition has GPUs: the placement
    sections alone, when no benchmark says what evals and launches really ask)."""
    results = []
    tried: set[tuple[str, ...]] = set()
    known, default = partitions() if any(k in TIME_FIXES for k in kinds) else ({}, None)
    for kind in kinds:
        place = settings.compute.placement(kind)
        gpus = 1 if kind in GPU_KINDS and _has_gpus(settings, place.partition) else 0
        spec = _probe_spec(settings, kind, gpus)
        flags = request_flags(spec)
        if tuple(flags) in tried:
            continue
        tried.add(tuple(flags))
        refused = sbatch_test_only(flags)
        part = known.get(spec.partition or default or "")
        if refused is None and kind in TIME_FIXES and part is not None and \
                part.max_minutes and spec.time_minutes > part.max_minutes:
            # a cluster that does not enforce partition limits at submission accepts the
            # job, which then pends forever (PartitionTimeLimit)
            refused = (f"the job would pend forever: partition {part.name} allows "
                       f"{part.max_minutes} min (sinfo's time limit)")
        too_long = refused is not None and kind in TIME_FIXES and (
            "time limit" in refused.lower() or "pend forever" in refused)
        if too_long:
            results.append(fail(f"slurm placement ({kind})", f"{shown(flags)}: {refused} (the "
                                f"partition's MaxTime is below the {_minutes(flags)} a "
                                f"{kind} job asks for)", TIME_FIXES[kind]))
        elif refused is not None:
            results.append(fail(f"slurm placement ({kind})", f"sbatch refuses {shown(flags)}: "
                                + refused, f"fix [compute.{kind}] (or [compute]) partition/"
                                f"account/qos/constraint/GPU settings to values `sinfo` and "
                                f"`sacctmgr show assoc user=$USER` list"))
        else:
            results.append(ok(f"slurm placement ({kind})",
                              f"sbatch --test-only accepts {shown(flags)}"))
    return results
