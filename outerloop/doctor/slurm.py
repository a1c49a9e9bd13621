"""Slurm: the commands and their versions, accounting, process tracking, and every
configured placement (partition, account, qos, constraint, GPU request) accepted by
``sbatch --test-only``."""

from __future__ import annotations

from outerloop.compute import jobenv
from outerloop.compute.base import JobSpec
from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, last_words, ok, run, warn
from outerloop.kinds import JOB_KINDS, JobKind

COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "sinfo")
GPU_KINDS: tuple[JobKind, ...] = ("launch", "eval")


def check_slurm(settings: Settings) -> list[Check]:
    if settings.compute.kind != "slurm":
        return [ok("slurm", "not used ([compute] kind is local)")]
    results = _commands()
    if any(not r.ok for r in results):
        return results
    results.append(_accounting())
    results.append(proctrack_check())
    results.extend(_placements(settings))
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


def _probe_spec(settings: Settings, kind: JobKind, gpus: int) -> JobSpec:
    spec = JobSpec(name=f"outerloop-doctor-{kind}", command="true", workdir=str(settings.home),
                   log_dir=str(settings.home), time_minutes=1, gpus=gpus)
    placed = jobenv.place(spec, settings.compute, kind)
    return jobenv.with_operator_settings(placed, settings.compute, {})


def _has_gpus(settings: Settings, partition: str | None) -> bool:
    argv = ["sinfo", "-h", "-o", "%G"] + (["-p", partition] if partition else [])
    done = run(argv)
    return done is not None and done.returncode == 0 and "gpu" in done.stdout


def _placements(settings: Settings) -> list[Check]:
    """One ``sbatch --test-only`` per distinct placement of the four job kinds (with
    a 1-GPU request for launches and evals where the partition has GPUs)."""
    results = []
    tried: dict[tuple[str, ...], Check] = {}
    for kind in JOB_KINDS:
        place = settings.compute.placement(kind)
        gpus = 1 if kind in GPU_KINDS and _has_gpus(settings, place.partition) else 0
        spec = _probe_spec(settings, kind, gpus)
        flags = [f"--time={spec.time_minutes}", "--ntasks=1", f"--cpus-per-task={spec.cpus}",
                 *([f"--mem={spec.mem_mb}M"] if spec.mem_mb else []),
                 *jobenv.gpu_flags(spec), *jobenv.placement_flags(spec)]
        key = tuple(flags)
        if key in tried:
            continue
        shown = " ".join(flags[3:]) or "the cluster's defaults"
        done = run(["sbatch", "--test-only", "--wrap=true", *flags])
        if done is None or done.returncode != 0:
            check = fail(f"slurm placement ({kind})", f"sbatch refuses {shown}: "
                         + (last_words(done) if done else "sbatch not found"),
                         f"fix [compute.{kind}] (or [compute]) partition/account/qos/"
                         f"constraint/GPU settings to values `sinfo` and `sacctmgr show "
                         f"assoc user=$USER` list")
        else:
            check = ok(f"slurm placement ({kind})", f"sbatch --test-only accepts {shown}")
        tried[key] = check
        results.append(check)
    return results
