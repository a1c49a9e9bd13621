"""``SlurmCompute``: the ``Compute`` protocol on a real Slurm cluster.

Cost: one observation pass is **one** ``squeue --me`` and **one** ``sacct`` per 500
ids, whatever the number of runs and jobs (a per-job query would make a quiet tick
cost hundreds of scheduler round trips). Parsing and the state rules live in
``slurm_parse``; the job script and sbatch argv in ``jobscript``.

Failure semantics (they decide whether runs live or die):

- a command that is missing, times out (``command_timeout_s``) or exits non-zero while
  being asked raises ``ComputeUnavailable``: the tick defers and concludes nothing;
- ``sbatch`` clearly refusing a job raises ``ComputeError`` carrying Slurm's own
  message; an sbatch failing any other way (``Socket timed out on send/recv
  operation``: Slurm often created the job) raises ``ComputeUnavailable``;
- a job neither the queue nor accounting knows is ``GONE``, never "finished";
- job ids are checked against ``JOB_ID_RE`` before they reach a command line;
- a job whose attempts (requeues after preemption) used more than twice its time
  limit is cancelled here and reported ``interrupted``; if the cancel fails it is
  reported as still live and the next pass tries again.

Scheduler-reading variables of the caller (``SLURM_*`` except ``SLURM_CONF``,
``SBATCH_*``, ``SQUEUE_*``, ``SACCT_*``) are removed from the commands' environment:
a submit from inside a job must not inherit that job's options, and a user's
``SQUEUE_FORMAT`` must not change what we parse.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import msgspec

from outerloop import child_wait, config, infra
from outerloop.compute import jobenv, jobscript
from outerloop.compute.base import (
    JOB_NAME_RE,
    JobObservation,
    JobSpec,
    JobState,
    QueueRow,
    check_job_id,
)
from outerloop.compute.slurm_parse import (
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    AcctRow,
    Observed,
    SqueueRow,
    build,
    parse_sacct,
    parse_squeue,
    queue_state,
    sbatch_refused,
)
from outerloop.config import ComputeSettings
from outerloop.errors import ComputeError, ComputeUnavailable

SACCT_CHUNK = 500
FIND_WINDOW = "now-14days"
_STRIPPED_PREFIXES = ("SLURM_", "SBATCH_", "SQUEUE_", "SACCT_", "SALLOC_", "SRUN_")
_KEPT = frozenset({"SLURM_CONF"})


class SlurmCompute:
    """Jobs on Slurm through its command-line tools (no daemon, no state of our own).

    ``calls`` counts the scheduler commands this instance ran (for tests and the
    benchmark of calls per tick).
    """

    def __init__(self, settings: ComputeSettings) -> None:
        self.settings = settings
        self.calls = 0

    # -- commands ----------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        return {k: v for k, v in config.environ().items()
                if k in _KEPT or not k.startswith(_STRIPPED_PREFIXES)}

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        """Run one scheduler command with the timeout. Missing or timed out ->
        ``ComputeUnavailable`` naming the command and the fix."""
        self.calls += 1
        timeout = self.settings.command_timeout_s
        try:
            return child_wait.run(argv, capture_output=True, text=True, timeout=timeout,
                                  env=self._env(), stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise ComputeUnavailable(
                f"{argv[0]} is not on PATH; fix: load Slurm's client tools (module load "
                f"slurm) for the process running outerloop, or set [compute] kind = "
                f"\"local\"") from None
        except subprocess.TimeoutExpired:
            raise ComputeUnavailable(
                f"{argv[0]} did not answer within {timeout} s (slurmctld/slurmdbd busy or "
                f"down?); deferring. fix: raise [compute] command_timeout_s if this "
                f"cluster is slow") from None
        except OSError as exc:
            raise ComputeUnavailable(f"cannot run {argv[0]}: {exc}") from None

    def _ask(self, argv: list[str]) -> str:
        """A query: its stdout, or ``ComputeUnavailable`` with Slurm's words."""
        done = self._run(argv)
        if done.returncode != 0:
            words = (done.stderr or done.stdout).strip().splitlines()
            raise ComputeUnavailable(f"{argv[0]} failed (exit {done.returncode}): "
                                     f"{words[-1] if words else 'no message'}")
        return done.stdout

    # -- submit ------------------------------------------------------------------

    def submit(self, spec: JobSpec) -> str:
        """Write the job script under ``spec.log_dir``, ``sbatch`` it, return the id.

        A clear refusal (``slurm_parse.sbatch_refused``: bad qos, account, partition,
        time, option) raises ``ComputeError`` with sbatch's message; any other failure
        (timed out, controller unreachable, an unrecognised message) raises
        ``ComputeUnavailable``: the job may exist, so the caller's intent stays pending
        and is settled by ``find_by_name`` before any retry.
        """
        spec = jobenv.with_operator_settings(msgspec.structs.replace(
            spec, workdir=str(spec.work_path.absolute()),
            log_dir=str(spec.log_path.absolute()),
        ), self.settings, config.environ())
        script = jobscript.script_path(spec)
        try:
            spec.log_path.mkdir(parents=True, exist_ok=True)
            tmp = script.with_name(f".{script.name}.{os.getpid()}")
            tmp.write_text(jobscript.render_script(spec, config.environ()), encoding="utf-8")
            tmp.chmod(0o700)
            os.replace(tmp, script)
        except OSError as exc:
            raise ComputeError(f"cannot write the job script {script}: {exc.strerror}; "
                               f"fix the path or its permissions") from None
        done = self._run(jobscript.sbatch_argv(spec, script))
        if done.returncode != 0:
            words = " ".join((done.stderr or done.stdout).split()) or "no message"
            if sbatch_refused(words):
                raise ComputeError(f"{infra.SCHEDULER_REFUSED} {spec.name}: {words}")
            raise ComputeUnavailable(
                f"sbatch gave no clear answer for job {spec.name} (exit {done.returncode}: "
                f"{words}); Slurm may have created it, so it is looked up by name before "
                f"any retry")
        job_id = done.stdout.strip().split(";", 1)[0]
        try:
            return check_job_id(job_id)
        except ValueError:
            raise ComputeError(f"sbatch answered {done.stdout.strip()!r} for job "
                               f"{spec.name}, not a job id") from None

    # -- observe -----------------------------------------------------------------

    def observe(self, job_ids: list[str]) -> dict[str, JobObservation]:
        """Every id's state from one ``squeue`` and one ``sacct`` per 500 ids.

        Raises ``ValueError`` for a malformed id (before any command runs) and
        ``ComputeUnavailable`` if either query fails: nothing is concluded then.
        """
        ids = list(dict.fromkeys(check_job_id(j) for j in job_ids))
        if not ids:
            return {}
        queue = parse_squeue(self._ask(["squeue", "--me", "--noheader", "-r",
                                        "-o", SQUEUE_FORMAT]))
        parents = sorted({j.partition("_")[0] for j in ids}, key=int)
        rows = []
        for chunk in _chunks(parents, SACCT_CHUNK):
            rows += parse_sacct(self._ask(["sacct", "-D", "-X", "-P", "-n", "-o", SACCT_FIELDS,
                                           "-j", ",".join(chunk)]))
        now = datetime.now()
        seen = build(ids, queue, rows, now)
        if seen.overrun:
            seen = self._cut_off(ids, seen, queue, rows, now)
        return seen.jobs

    def _cut_off(self, ids: list[str], seen: Observed, queue: list[SqueueRow],
                 rows: list[AcctRow], now: datetime) -> Observed:
        """Cancel jobs whose attempts overran; those cancelled read ``interrupted``."""
        cut = set()
        for job_id in seen.overrun:
            try:
                if self.cancel(job_id):
                    cut.add(job_id)
            except ComputeError:
                continue
        if not cut:
            return seen
        return build(ids, queue, rows, now, cut_off=frozenset(cut))

    # -- queue, names, cancel, load ------------------------------------------------

    def queue(self) -> list[QueueRow]:
        """The user's jobs Slurm still lists (one row per job; arrays folded)."""
        entries = parse_squeue(self._ask(["squeue", "--me", "--noheader",
                                          "-o", SQUEUE_FORMAT]))
        return [QueueRow(job_id=e.job_id, name=e.name,
                         state=queue_state(e.state) or JobState.UNKNOWN, elapsed=e.elapsed,
                         partition=e.partition, submitted=e.submitted, reason=e.reason,
                         limit=e.limit) for e in entries]

    def find_by_name(self, name: str, live_only: bool = False,
                     home: Path | None = None) -> str | None:
        """The newest job with this name, from the queue and the last 14 days of
        accounting (an intent older than that is settled some other way); ``live_only``:
        from the queue alone (the account's accounting may hold an older job of that
        name the ledger lost). With ``home``, only a job whose working directory is in
        it (sbatch runs each job in its log directory, under its home): another home on
        the same account may have submitted a job of the same name (run ids are a
        benchmark, a second and an agent), and it is never this home's."""
        if not JOB_NAME_RE.match(name):
            return None
        listed = self._ask(["squeue", "--me", "--noheader", "-r", "-n", name,
                            "-o", "%i|%Z"])
        known = "" if live_only else self._ask([
            "sacct", "-X", "-P", "-n", "-u", str(os.getuid()), "--name", name, "-S",
            FIND_WINDOW, "-o", "JobID,WorkDir"])
        ids = set()
        for line in (listed + "\n" + known).splitlines():
            job, _, workdir = line.strip().partition("|")
            base = job.split("_", 1)[0]
            if base.isdigit() and (home is None or _within(workdir, home)):
                ids.add(int(base))
        return str(max(ids)) if ids else None

    def cancel(self, job_id: str) -> bool:
        """``scancel``; True when Slurm accepted (also for unknown or finished jobs,
        which scancel accepts silently). Slurm unreachable -> ``ComputeUnavailable``."""
        check_job_id(job_id)
        return self._run(["scancel", job_id]).returncode == 0

    def lane_load(self, partition: str) -> dict[str, int]:
        """Nodes per state in ``partition`` (``sinfo -o "%T %D"``): ``{"idle": 1}``."""
        out: dict[str, int] = {}
        for line in self._ask(["sinfo", "--noheader", "-p", partition, "-o", "%T %D"]) \
                .splitlines():
            state, _, count = line.strip().partition(" ")
            if count.isdigit():
                out[state] = out.get(state, 0) + int(count)
        return out


def _within(workdir: str, home: Path) -> bool:
    """Whether a job's working directory, as Slurm reports it, is in ``home`` (both
    with their links resolved)."""
    if not workdir.startswith("/"):
        return False
    return Path(os.path.realpath(workdir)).is_relative_to(os.path.realpath(home))


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]

