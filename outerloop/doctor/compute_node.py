"""A real job where the work runs: the ``[compute] setup`` lines, and (on Slurm) the
sandbox proven on the compute node, not only on the login node.

One short job per distinct partition that sessions, launches and evals use, placed,
given ``pass_env`` and ``setup`` exactly as the kernel's jobs are (it is submitted
through the same ``Compute`` backend). Its setup lines run first, in the job's own
shell; a failing line ends the job with ``SETUP_FAILED_EXIT`` and its message
(``[compute] setup line 1 failed: module load cuda/12.4``), which is quoted with the
file it is in. Then ``doctor/node_probe.py`` proves the sandbox there. With local
compute the job runs only the setup lines (the sandbox check already proved this
host), and only when there are some.

The job is submitted before the first check runs and read in its turn, so it runs
while the other checks do. A job still waiting after ``WAIT_S`` is cancelled and
both checks say they were not checked (a warning): a busy queue is not a broken
setup, but it is not a pass either.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.compute.base import Compute, JobObservation, JobSpec
from outerloop.config import Settings
from outerloop.doctor.base import Check, Options, fail, not_checked, ok, took, warn
from outerloop.doctor.node_probe import CLIS_ONLY, cli_binaries
from outerloop.kinds import JobKind
from outerloop.settings_snapshot import SNAPSHOT_VAR, write_snapshot

WAIT_S = 180
POLL_S = 1.0
JOB_MINUTES = 5
NODE_DIR = "cache/doctor/node"
SETUP_MARK = "outerloop: [compute] setup line "
KINDS: tuple[JobKind, ...] = ("session", "launch", "eval")
SINCE = "after submission"


@dataclass(frozen=True)
class Probe:
    label: str
    """``""`` for a single probe; the partition when several are probed."""
    kind: JobKind
    spec: JobSpec


def _suffix(label: str) -> str:
    return f" (partition {label})" if label else ""


def _probes(settings: Settings) -> list[Probe]:
    from outerloop.compute import jobenv

    slurm = settings.compute.kind == "slurm"
    folder = settings.home / NODE_DIR
    argv = [sys.executable, "-m", "outerloop.doctor.node_probe", str(settings.home)]
    if slurm:
        command = shlex.join(argv)
    elif cli_binaries(settings):
        command = shlex.join([*argv, CLIS_ONLY])
    else:
        command = "true"
    env = {SNAPSHOT_VAR: str(write_snapshot(settings))}
    by_partition: dict[str, JobKind] = {}
    for kind in KINDS if slurm else KINDS[:1]:
        by_partition.setdefault(settings.compute.placement(kind).partition or "", kind)
    several = len(by_partition) > 1
    probes = []
    for partition, kind in by_partition.items():
        label = (partition or "default") if several else ""
        logs = folder / (label or "job")
        spec = JobSpec(name="outerloop-doctor-node", command=command, workdir=str(logs),
                       log_dir=str(logs), time_minutes=JOB_MINUTES, env=env)
        probes.append(Probe(label, kind, jobenv.place(spec, settings.compute, kind)))
    return probes


@dataclass
class Submitted:
    """The probe jobs ``start`` submitted (by id), and the refusals."""

    compute: Compute
    started: float
    jobs: dict[str, Probe] = field(default_factory=dict)
    refused: list[Check] = field(default_factory=list)


class ComputeNodeCheck:
    """The check, in two steps so the job runs while the other checks do: ``start``
    submits (``run_checks`` calls it before any check), calling it collects."""

    __name__ = "check_compute_node"

    def __init__(self, options: Options) -> None:
        self.options = options
        self.submitted: Submitted | None = None

    def start(self, settings: Settings) -> None:
        if _names(settings) and not self.options.quick and self.submitted is None:
            self.submitted = _submit(settings)

    def __call__(self, settings: Settings) -> list[Check]:
        names = _names(settings)
        if not names:
            return [ok("compute setup", "no [compute] setup lines")]
        if self.options.quick:
            return [not_checked(n, "it runs a short job") for n in names]
        self.start(settings)
        assert self.submitted is not None
        done, self.submitted = self.submitted, None
        seen = _wait(done.compute, list(done.jobs))
        checks = list(done.refused)
        for job, probe in done.jobs.items():
            checks += _results(settings, job, probe, seen.get(job), done.started)
        return checks


CLI_CHECK = "agent CLI on a compute node"


def _names(settings: Settings) -> list[str]:
    """The checks the job answers: none with local compute and no setup lines (its jobs
    find what doctor's own checks found)."""
    clis = [CLI_CHECK] if cli_binaries(settings) else []
    if settings.compute.kind == "slurm":
        return ["compute setup", "sandbox on a compute node", *clis]
    return ["compute setup", *clis] if settings.compute.setup else []


def _submit(settings: Settings) -> Submitted:
    from outerloop.compute.factory import make_compute
    from outerloop.errors import OuterloopError

    submitted = Submitted(make_compute(settings), time.monotonic())
    probes = _probes(settings)
    shutil.rmtree(settings.home / NODE_DIR, ignore_errors=True)
    for probe in probes:
        probe.spec.log_path.mkdir(parents=True, exist_ok=True)
        try:
            submitted.jobs[submitted.compute.submit(probe.spec)] = probe
        except OuterloopError as exc:
            submitted.refused += [
                fail(n + _suffix(probe.label), f"the probe job could not be submitted: {exc}",
                     f"fix [compute.{probe.kind}] (or [compute]) placement; see the slurm "
                     f"placement lines") for n in _names(settings)]
    return submitted


def _wait(compute: Compute, jobs: list[str]) -> dict[str, JobObservation]:
    """Each job's last observation; a job still not ended after ``WAIT_S`` is
    cancelled (and left out)."""
    from outerloop.errors import ComputeUnavailable

    deadline = time.monotonic() + WAIT_S
    seen: dict[str, JobObservation] = {}
    while jobs:
        with contextlib.suppress(ComputeUnavailable):
            seen.update(compute.observe(jobs))
        jobs = [j for j in jobs if j not in seen or not seen[j].state.terminal]
        if not jobs:
            break
        if time.monotonic() > deadline:
            for job in jobs:
                compute.cancel(job)
                seen.pop(job, None)
            break
        time.sleep(POLL_S)
    return seen


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def setup_failure(stderr: str) -> tuple[str, str] | None:
    """(``[compute] setup line N failed: LINE``, the line's own last words before it)
    from a job's stderr, or None when no setup line failed."""
    lines = stderr.splitlines()
    for at in range(len(lines) - 1, -1, -1):
        if lines[at].startswith(SETUP_MARK):
            before = next((ln.strip() for ln in reversed(lines[:at]) if ln.strip()
                           and not ln.startswith("outerloop: attempt ")), "")
            return lines[at].removeprefix("outerloop: "), before
    return None


def _results(settings: Settings, job: str, probe: Probe, seen: JobObservation | None,
             started: float) -> list[Check]:
    slurm = settings.compute.kind == "slurm"
    names = [n + _suffix(probe.label) for n in _names(settings)]
    if seen is None:
        return [warn(n, f"not checked: probe job {job} did not end within {WAIT_S} s "
                     f"(cancelled){took(started, SINCE)}", "run doctor again when the queue is "
                     "less busy") for n in names]
    logs = probe.spec.log_path
    stderr = logs / "stderr"
    failed = setup_failure(_read(stderr))
    if failed is not None:
        said, words = failed
        quoted = f"{said}" + (f" ({words})" if words else "")
        checks = [fail(names[0], f"{quoted}; see {stderr} (job {job}){took(started, SINCE)}",
                       "fix or remove that line of [compute] setup in outerloop.toml: every "
                       "job runs it first, and a failing line fails the job")]
        checks += [warn(n, f"{'not proved' if n.startswith('sandbox') else 'not checked'}: "
                        f"the probe job's setup failed (see compute setup)",
                        "fix [compute] setup first") for n in names[1:]]
        return checks
    code = _read(logs / "exit_code").strip() or str(seen.exit_code)
    lines = len(settings.compute.setup)
    ran = (f"{lines} setup line(s) ran in job {job}" if lines else
           f"no [compute] setup lines; job {job} ran")
    if code != "0":
        return [fail(n, f"probe job {job} ended {seen.state.value} (exit {code}); see "
                     f"{stderr}{took(started, SINCE)}", "read that file: the job could not run "
                     "outerloop on the node (interpreter, home, or file system)")
                for n in names]
    checks = [ok(names[0], f"{ran}{took(started, SINCE)}")]
    if slurm:
        checks.append(_sandbox(names[1], logs, job, started))
    if cli_binaries(settings):
        checks.append(_clis(names[-1], logs, job, started))
    return checks


def _clis(name: str, logs: Path, job: str, started: float) -> Check:
    """Each agent CLI as the node's PATH found it, after the setup lines."""
    out = _read(logs / "stdout").strip().splitlines()
    try:
        said = json.loads(out[-1]) if out else {}
    except ValueError:
        said = {}
    clis = said.get("clis") if isinstance(said, dict) else None
    if not isinstance(clis, dict) or not clis:
        return fail(name, f"probe job {job} printed no CLI versions; see {logs / 'stderr'}",
                    "read that file")
    where = f"on {said.get('host')} (job {job}){took(started, SINCE)}"
    missing = [f"{b}: {v.get('error')}" for b, v in clis.items()
               if isinstance(v, dict) and "version" not in v]
    if missing:
        return fail(name, f"{'; '.join(missing)} {where}", "install the agent CLI where "
                    "jobs run, or add a [compute] setup line that puts it on PATH (module "
                    "load ...), or set the seat's binary to a path the nodes see; a session "
                    "without it waits as a deployment problem")
    found = ", ".join(f"{b} {v.get('version')}" for b, v in clis.items())
    return ok(name, f"{found} {where}")


def _sandbox(name: str, logs: Path, job: str, started: float) -> Check:
    out = _read(logs / "stdout").strip().splitlines()
    try:
        proof = json.loads(out[-1]) if out else {}
    except ValueError:
        proof = {}
    if not isinstance(proof, dict) or "ok" not in proof:
        return fail(name, f"probe job {job} printed no proof; see {logs / 'stderr'}",
                    "read that file")
    where = f"on {proof.get('host')} (job {job}){took(started, SINCE)}"
    if proof["ok"]:
        return ok(name, f"{proof.get('detail')} {where}")
    return fail(name, f"{proof.get('detail')} {where}",
                str(proof.get("hint") or "see docs/security.md"))
