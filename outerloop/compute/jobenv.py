"""What the operator adds to every job, whatever the backend: placement fallbacks,
GPU request flags, ``[compute] pass_env`` variables and ``[compute] setup`` lines.

Kept apart from ``jobscript`` (the batch script's skeleton) and ``local_runner`` (the
local process) so each of those only calls in here. Pure functions, no I/O.

- **GPUs**: ``gpus`` is per node (per array task); the request form is a cluster
  setting: ``--gpus-per-node=[TYPE:]N`` (default) or ``--gres=gpu[:TYPE]:N``.
- **pass_env**: the names' values are copied from the submitting process into the
  job's environment (a name not set there is skipped). Secret-looking names are
  refused when the settings load (``config.ComputeSettings``).
- **setup**: run in the job's shell before the command, each line checked; a failing
  line ends the job with ``SETUP_FAILED_EXIT`` and says which line in ``stderr``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

import msgspec

from outerloop import infra
from outerloop.compute.base import JobSpec
from outerloop.config import ComputeSettings
from outerloop.kinds import JobKind

SETUP_FAILED_EXIT = infra.SETUP_FAILED_EXIT
SETUP_FUNCTION = "outerloop_setup"


def with_operator_settings(spec: JobSpec, settings: ComputeSettings,
                           caller_env: Mapping[str, str]) -> JobSpec:
    """``spec`` with ``[compute]``'s partition/account/qos/constraint/mem/GPU form as
    fallbacks (a placed spec keeps its own), the ``pass_env`` values and the
    ``setup`` lines. The spec's own ``env`` wins over a passed variable."""
    passed = passed_env(settings, caller_env)
    update: dict[str, object] = {
        "partition": spec.partition or settings.partition,
        "account": spec.account or settings.account,
        "qos": spec.qos or settings.qos,
        "constraint": spec.constraint or settings.constraint,
        "mem_mb": spec.mem_mb or settings.mem_mb,
        "gpu_type": spec.gpu_type or settings.gpu_type,
        "gpu_request": spec.gpu_request or settings.gpu_request,
        "env": {**passed, **spec.env},
        "setup": spec.setup or tuple(settings.setup),
    }
    if not spec.extra_sbatch and settings.extra_sbatch:
        update["extra_sbatch"] = tuple(settings.extra_sbatch)
    return msgspec.structs.replace(spec, **update)


def passed_env(settings: ComputeSettings, caller_env: Mapping[str, str]) -> dict[str, str]:
    """The ``pass_env`` names set (non-empty) in ``caller_env``, with their values, in the
    order ``pass_env`` lists them. A tick driver (cron, systemd, the resident script)
    must carry these itself: the tick is the process jobs copy them from."""
    return {name: caller_env[name] for name in settings.pass_env if caller_env.get(name)}


def unset_pass_env(settings: ComputeSettings, caller_env: Mapping[str, str]) -> list[str]:
    """The ``pass_env`` names not set (or empty) in ``caller_env``: jobs would not get them."""
    return [name for name in settings.pass_env if not caller_env.get(name)]


def place(spec: JobSpec, settings: ComputeSettings, kind: JobKind) -> JobSpec:
    """``spec`` placed as ``[compute.<kind>]`` says, each unset field falling back to
    ``[compute]``: partition, account, qos, constraint, mem, cpus, GPU type and form,
    extra options; the kind's ``time_minutes`` caps the job's time limit."""
    p = settings.placement(kind)
    minutes = min(spec.time_minutes, p.time_minutes) if p.time_minutes else spec.time_minutes
    return msgspec.structs.replace(spec, **{
        "partition": p.partition, "account": p.account, "qos": p.qos,
        "constraint": p.constraint, "mem_mb": spec.mem_mb or p.mem_mb,
        "cpus": p.cpus or spec.cpus, "time_minutes": minutes, "gpu_type": p.gpu_type,
        "gpu_request": p.gpu_request,
        "extra_sbatch": tuple(p.extra_sbatch or ()),
    })


def gpu_flags(spec: JobSpec) -> list[str]:
    """The sbatch options asking for ``spec``'s GPUs and nodes (none for a CPU job)."""
    flags = [f"--nodes={spec.nodes}"] if spec.nodes > 1 else []
    if not spec.gpus:
        return flags
    if spec.gpu_request == "gres":
        kind = f"gpu:{spec.gpu_type}" if spec.gpu_type else "gpu"
        flags.append(f"--gres={kind}:{spec.gpus}")
    else:
        count = f"{spec.gpu_type}:{spec.gpus}" if spec.gpu_type else str(spec.gpus)
        flags.append(f"--gpus-per-node={count}")
    return flags


def placement_flags(spec: JobSpec) -> list[str]:
    """Partition, account, qos, constraint and the extra options, each only when set."""
    flags = [f"--{flag}={value}" for flag, value in (
        ("partition", spec.partition), ("account", spec.account), ("qos", spec.qos),
        ("constraint", spec.constraint)) if value]
    return flags + list(spec.extra_sbatch)


def setup_lines(spec: JobSpec, log: str = '"$OUTERLOOP_LOG/stderr"') -> list[str]:
    """Shell defining and calling ``outerloop_setup`` (the operator's setup lines, in
    this shell, so ``module load`` and ``source venv/bin/activate`` last); a failing
    line exits the shell with ``SETUP_FAILED_EXIT``. Empty when there is no setup."""
    if not spec.setup:
        return []
    lines = [f"{SETUP_FUNCTION}() {{"]
    for index, line in enumerate(spec.setup, 1):
        quoted = shlex.quote(f"outerloop: {infra.SETUP_FAILED_WORDS} {index} failed: {line}")
        lines += [line, f'rc=$?; [ "$rc" -eq 0 ] || {{ echo {quoted} >&2; return "$rc"; }}']
    lines.append("}")
    lines.append(f"{SETUP_FUNCTION} >>{log} 2>&1")
    return lines


def local_command(spec: JobSpec) -> str:
    """The shell text a local job runs: the setup lines, then the command."""
    lines = setup_lines(spec, log="/dev/stderr")
    if not lines:
        return spec.command
    lines[-1] = f"{SETUP_FUNCTION} >&2 || exit {SETUP_FAILED_EXIT}"
    return "\n".join([*lines, spec.command])
