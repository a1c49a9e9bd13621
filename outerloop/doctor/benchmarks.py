"""Where each benchmark's jobs would really go: its eval pair job and its launches,
built as the kernel builds them (``run/jobs.py``: the benchmark's ``gpus`` and
``nodes``, the pair's time limit, ``[compute.eval]``/``[compute.launch]`` placement and
the operator's fallbacks), offered to ``sbatch --test-only``.

A refusal names the field to change: the benchmark's ``gpus`` when no node of the
partition has that many GPUs, its ``nodes`` when the partition has fewer nodes, its
``eval_minutes`` when the pair job outlasts the partition's limit; otherwise the
placement section (partition, account, qos, constraint, memory) with Slurm's words.
"""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.compute.base import JobSpec
from outerloop.config import Settings, environ
from outerloop.contract import Benchmark, Contract
from outerloop.doctor.base import Check, fail, ok, warn
from outerloop.doctor.partitions import Partition, partitions
from outerloop.doctor.slurm import (
    GPU_KINDS,
    check_kind_placements,
    request_flags,
    sbatch_test_only,
    shown,
)
from outerloop.kinds import JobKind


@dataclass(frozen=True)
class Request:
    """One job a benchmark makes, as submitted."""

    repo: str
    index: int
    benchmark: Benchmark
    kind: JobKind
    spec: JobSpec


def benchmark_requests(settings: Settings, repo: str, contract: Contract) -> list[Request]:
    """Each benchmark's eval pair job, and its launch when it has GPUs (a launch task
    asks the benchmark's GPUs by default, within the GPU cap)."""
    from outerloop.compute import jobenv
    from outerloop.limits import benchmark_limits, operator_ceilings, target_limits
    from outerloop.run import jobs
    from outerloop.time_caps import pair_minutes

    ceilings = operator_ceilings(settings)
    cap = target_limits(contract, settings).max_concurrent_gpus
    requests = []
    for index, benchmark in enumerate(contract.benchmarks):
        limits = benchmark_limits(contract, benchmark, ceilings)
        minutes = pair_minutes(limits.eval_minutes, benchmark.score is not None)
        measure = jobs.measure_spec(settings, "doctor", f"outerloop-doctor-{benchmark.name}",
                                    minutes, gpus=limits.gpus, nodes=limits.nodes)
        specs: list[tuple[JobKind, JobSpec]] = [("eval", measure)]
        gpus = limits.gpus if cap is None else min(limits.gpus, cap)
        if gpus:
            launch = JobSpec(name=f"outerloop-doctor-{benchmark.name}", command="true",
                             workdir=str(settings.home), log_dir=str(settings.home),
                             time_minutes=1, gpus=gpus, nodes=limits.nodes)
            specs.append(("launch", jobenv.place(launch, settings.compute, "launch")))
        for kind, spec in specs:
            spec = jobenv.with_operator_settings(spec, settings.compute, environ())
            requests.append(Request(repo, index, benchmark, kind, spec))
    return requests


def blame(request: Request, known: dict[str, Partition], default: str | None,
          refused: str) -> tuple[str, str] | None:
    """(detail, fix) naming the benchmark's field that makes ``request`` impossible;
    None when none does (the placement is at fault)."""
    spec, b, i = request.spec, request.benchmark, request.index
    where = f"benchmarks[{i}]"
    contract = f"in {request.repo}'s .outerloop.yaml"
    part = known.get(spec.partition or default or "")
    if part is not None:
        most = part.most_gpus(spec.gpu_type)
        of = f"{spec.gpu_type} " if spec.gpu_type else ""
        if spec.gpus > most:
            return (f"{where}.gpus = {spec.gpus} ({b.name}): no node of partition {part.name} "
                    f"has {spec.gpus} {of}GPUs (the most is {most}); sbatch: {refused}",
                    f"lower {where}.gpus to at most {most} {contract}, or place "
                    f"{request.kind}s on nodes that have {spec.gpus} ([compute.{request.kind}] "
                    f"partition, gpu_type)")
        if spec.nodes > len(part.nodes):
            return (f"{where}.nodes = {spec.nodes} ({b.name}): partition {part.name} has "
                    f"{len(part.nodes)} node(s); sbatch: {refused}",
                    f"lower {where}.nodes to at most {len(part.nodes)} {contract}, or place "
                    f"{request.kind}s on a bigger partition ([compute.{request.kind}] partition)")
        if request.kind == "eval" and part.max_minutes and spec.time_minutes > part.max_minutes:
            return (f"{where}.eval_minutes = {b.eval_minutes} ({b.name}): its pair job asks "
                    f"{spec.time_minutes} min, partition {part.name} allows "
                    f"{part.max_minutes}; sbatch: {refused}",
                    f"lower {where}.eval_minutes {contract} so its pair job fits in "
                    f"{part.max_minutes} min, or place evals on a partition that allows "
                    f"{spec.time_minutes} min ([compute.eval] partition); never cap "
                    f"[compute.eval] time_minutes below {spec.time_minutes}: every pair "
                    f"would time out (a deployment problem, not the benchmark's)")
    return None


def check_benchmark_placement(settings: Settings) -> list[Check]:
    if settings.compute.kind != "slurm":
        return []
    from outerloop.doctor.contracts import read_contracts

    readable = [(r.repo, r.contract) for r in read_contracts(settings) if r.contract]
    if not readable:
        return [*check_kind_placements(settings, GPU_KINDS),
                warn("slurm placement (benchmarks)", "not checked: no target's contract "
                     "could be read (see contracts); launches and evals were probed with 1 "
                     "GPU", "fix the contracts check, then run doctor again")]
    known, default = partitions()
    verdicts: dict[tuple[str, ...], str | None] = {}
    groups: dict[tuple[str, JobKind, tuple[str, ...]], list[Request]] = {}
    for repo, contract in readable:
        for request in benchmark_requests(settings, repo, contract):
            flags = tuple(request_flags(request.spec))
            if flags not in verdicts:
                verdicts[flags] = sbatch_test_only(list(flags))
            groups.setdefault((repo, request.kind, flags), []).append(request)
    checks = []
    for (repo, kind, flags), requests in groups.items():
        names = ", ".join(r.benchmark.name for r in requests)
        name = f"slurm placement ({kind}: {repo} {names})"
        refused = verdicts[flags]
        if refused is None:
            checks.append(ok(name, f"sbatch --test-only accepts {shown(list(flags))}"))
            continue
        blamed = [(r, blame(r, known, default, refused)) for r in requests]
        for request, found in blamed:
            if found is not None:
                checks.append(fail(f"slurm placement ({kind}: {repo} "
                                   f"{request.benchmark.name})", *found))
        if any(found is None for _, found in blamed):
            checks.append(fail(name, f"sbatch refuses {shown(list(flags))}: {refused}",
                               f"fix [compute.{kind}] (or [compute]) partition/account/qos/"
                               f"constraint/mem_mb/GPU settings to values `sinfo` and "
                               f"`sacctmgr show assoc user=$USER` list"))
    return checks


def check_time_caps(settings: Settings) -> list[Check]:
    """The operator's time caps against what each target's jobs need (``time_caps``):
    a cap below need is a failure naming the setting and the figure (every such job
    would time out, and the run would wait for the fix), whatever the compute."""
    from outerloop.doctor.contracts import read_contracts
    from outerloop.time_caps import cap_setting, shortfalls

    if cap_setting(settings, "session") is None and cap_setting(settings, "eval") is None:
        return []
    found = list(dict.fromkeys(line for r in read_contracts(settings) if r.contract
                               for line in shortfalls(settings, r.repo, r.contract)))
    if not found:
        return [ok("time caps", "the [compute] time_minutes caps leave every job the "
                   "time it needs")]
    return [fail("time caps", line.split("; fix: ", 1)[0],
                 line.split("; fix: ", 1)[-1]) for line in found]
