"""Start modes (ARCHITECTURE §6): how ticks keep happening without an operator.

- **resident** (Slurm): a small CPU job runs ``outerloop tick`` every cadence and,
  before its walltime ends, hands over to one successor submitted with
  ``--dependency=afterany:<self>,singleton`` under the same job name, then exits. The
  successor cannot start before its predecessor ends (afterany) nor beside any other
  job of that name (singleton), so at most one chain job runs. Before submitting, the
  queue is checked for a waiting job of the name, so a retry cannot fork the chain.
- **cron**: one crontab line; the tick lock gives exclusion if ticks overlap.
- **local**: a foreground loop (``outerloop start --mode local``), one tick per cadence,
  and sooner while jobs are live: at once when a local job ends (a cheap look at the
  job records every second), and at least every 30 s whatever the compute, so a
  minute-long run is not stretched to the cadence at every step.

Each tick of the resident chain runs as its own ``outerloop tick`` process with a
timeout, so a crash or a hang in one tick costs that tick, not the chain.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from outerloop.clock import now, stamp_seconds
from outerloop.compute import jobenv
from outerloop.compute.base import JobSpec
from outerloop.config import Settings, env_value, override_variables
from outerloop.errors import ComputeError, ConfigError

RESIDENT_DIR = "resident"
RESIDENT_WALLTIME_MINUTES = 12 * 60
HANDOVER_SLACK_S = 60
CRON_MARKER = "# outerloop tick for "
LIVE_JOBS_MAX_WAIT_S = 30.0
JOB_POLL_S = 1.0
CRON_LOG = "cron.log"


def resident_name(home: Path) -> str:
    """One chain per home: the job name carries a short hash of the home path."""
    digest = hashlib.sha256(str(home).encode()).hexdigest()[:8]
    return f"outerloop-resident-{digest}"


def resident_argv(settings: Settings, walltime_minutes: int,
                  cadence_s: float | None = None) -> list[str]:
    """The command the resident job runs (``start --mode resident --in-job``)."""
    argv = [sys.executable, "-m", "outerloop", "start", "--mode", "resident", "--in-job",
            "--home", str(settings.home), "--walltime-minutes", str(walltime_minutes)]
    if cadence_s is not None:
        argv += ["--cadence-seconds", f"{cadence_s:g}"]
    return argv


def resident_spec(settings: Settings, walltime_minutes: int, cadence_s: float | None = None,
                  after: str | None = None, name: str | None = None) -> JobSpec:
    """The chain job: one CPU, placed as ``[compute.kernel]`` says, singleton, and
    ``afterany`` on its predecessor when it is a successor. A successor keeps its
    predecessor's ``name`` (a chain started from ``deploy/resident.sbatch`` too).

    The chain carries the ``OUTERLOOP_<SECTION>_<FIELD>`` overrides it was started
    with, and re-reads ``outerloop.toml`` at every tick (an edit applies next tick)."""
    ceiling = settings.compute.placement("kernel").time_minutes
    if ceiling:  # the loop must hand over before the kind's time limit ends it
        walltime_minutes = min(walltime_minutes, ceiling)
    spec = JobSpec(
        name=name or resident_name(settings.home),
        command=shlex.join(resident_argv(settings, walltime_minutes, cadence_s)),
        workdir=str(settings.home), log_dir=str(settings.home / RESIDENT_DIR),
        time_minutes=walltime_minutes, cpus=1, singleton=True,
        after_any=(after,) if after else (),
        env={**override_variables(), "OUTERLOOP_HOME": str(settings.home)},
    )
    return jobenv.place(spec, settings.compute, "kernel")


def handover_margin_s(settings: Settings, walltime_s: float) -> float:
    """How long before the walltime the chain hands over: time for one more tick and
    the submit, but never more than half the walltime (short test walltimes)."""
    return min(settings.cadence.tick_timeout_s + HANDOVER_SLACK_S, walltime_s / 2)


@dataclass
class ResidentLoop:
    """The body of the resident job."""

    settings: Settings
    walltime_minutes: int
    cadence_flag: float | None = None
    """``--cadence-seconds``, passed on to successors; None: ``[cadence] tick_minutes``
    as configured when each job starts."""

    @property
    def cadence_s(self) -> float:
        return self.cadence_flag or self.settings.cadence.tick_minutes * 60

    def run(self) -> str | None:
        """Tick until the handover point, hand over, return the successor's id (None
        if one was already waiting). Submit failures raise ``ComputeError`` after
        retrying until the walltime is nearly spent: a chain must not end silently."""
        from outerloop.compute.factory import make_compute

        started = time.monotonic()
        walltime_s = self.walltime_minutes * 60
        handover_at = started + walltime_s - handover_margin_s(self.settings, walltime_s)
        while True:
            self._tick()
            if time.monotonic() + self.cadence_s >= handover_at:
                break
            time.sleep(self.cadence_s)
        compute = make_compute(self.settings)
        me = env_value("OUTERLOOP_JOB_ID") or env_value("SLURM_JOB_ID")
        name = env_value("SLURM_JOB_NAME") or resident_name(self.settings.home)
        last_error: ComputeError | None = None
        while time.monotonic() < started + walltime_s - 15:
            try:
                waiting = [r.job_id for r in compute.queue() if r.name == name and
                           r.job_id != me]
                if waiting:
                    print(f"handover: successor {waiting[0]} already waits", flush=True)
                    return None
                spec = resident_spec(self.settings, self.walltime_minutes,
                                     self.cadence_flag, after=me, name=name)
                job_id = compute.submit(spec)
                print(f"handover: successor {job_id} submitted (afterany:{me},singleton)",
                      flush=True)
                return job_id
            except ComputeError as exc:
                last_error = exc
                print(f"handover failed, retrying: {exc}", flush=True)
                time.sleep(10)
        raise ComputeError(f"the resident chain could not hand over: {last_error}; fix the "
                           f"cause, then run `outerloop start --mode resident` again")

    def _tick(self) -> None:
        argv = [sys.executable, "-m", "outerloop", "tick", "--home", str(self.settings.home)]
        timeout = self.settings.cadence.tick_timeout_s + HANDOVER_SLACK_S
        stamp = stamp_seconds(now())
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  check=False)
            text = (done.stdout + done.stderr).strip()
            print(f"{stamp} tick exit {done.returncode}: {text}", flush=True)
        except subprocess.TimeoutExpired:
            print(f"{stamp} tick killed after {timeout} s", flush=True)


MINUTE_STEPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)
HOUR_STEPS = (1, 2, 3, 4, 6, 8, 12, 24)


def cron_cadences() -> list[int]:
    """Every cadence (minutes) a crontab line can keep exactly: steps that divide an
    hour, then whole hours that divide a day."""
    return [*MINUTE_STEPS, *(h * 60 for h in HOUR_STEPS)]


def cron_schedule(minutes: int) -> str:
    """The five crontab fields for one tick every ``minutes``, or ``ConfigError`` with
    the nearest cadences cron can keep (``*/45`` would fire at :00 and :45; ``*/90``
    is not a minute step at all)."""
    if minutes == 1:
        return "* * * * *"
    if minutes in MINUTE_STEPS:
        return f"*/{minutes} * * * *"
    if minutes % 60 == 0 and minutes // 60 in HOUR_STEPS:
        hours = minutes // 60
        return "0 * * * *" if hours == 1 else "0 0 * * *" if hours == 24 else f"0 */{hours} * * *"
    valid = cron_cadences()
    below = max((v for v in valid if v < minutes), default=valid[0])
    above = min((v for v in valid if v > minutes), default=valid[-1])
    raise ConfigError(f"[cadence] tick_minutes = {minutes} cannot be kept by a crontab line "
                      f"(cron steps must divide an hour or a day); fix: set tick_minutes to "
                      f"{below} or {above}, or use the resident chain or the systemd timer, "
                      f"which keep any cadence")


class JobWatch:
    """What the local loop waits on between ticks: the ledger's live jobs, and (with
    local compute, where looking is a few file reads) whether one of them has ended."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.watched: list[str] = []
        self.seen_ended: set[str] = set()
        """Jobs already seen ended: each end wakes the loop once, never a tick a second."""

    def refresh(self) -> list[str]:
        """The live job ids as the ledger has them now."""
        from outerloop.ledger.book import rebuild

        state = rebuild(self.settings.home, save_cache=False)
        self.watched = [job.job_id for job in state.live_jobs()]
        return self.watched

    def one_ended(self) -> bool:
        """True when a watched job has ended (local compute only; False otherwise)."""
        if not self.watched or self.settings.compute.kind != "local":
            return False
        from outerloop.compute.factory import make_compute

        seen = make_compute(self.settings).observe(self.watched)
        ended = {job for job, obs in seen.items() if obs.state.terminal} - self.seen_ended
        self.seen_ended |= ended
        return bool(ended)


def wait_s(cadence_s: float, live_jobs: int) -> float:
    """How long the local loop sleeps before the next tick at most."""
    return min(cadence_s, LIVE_JOBS_MAX_WAIT_S) if live_jobs else cadence_s


def cron_line(settings: Settings, path_env: str | None,
              passed: Mapping[str, str] | None = None) -> str:
    """The crontab line: every ``tick_minutes``, quiet, output appended to a log.

    cron starts the tick with almost no environment, and the tick is the process jobs
    copy ``[compute] pass_env`` from, so the line sets ``PATH`` and each ``passed``
    name (``jobenv.passed_env``: the values where the line is made) itself. A ``%`` is
    escaped (cron reads a bare one as a newline)."""
    minutes = settings.cadence.tick_minutes
    when = cron_schedule(minutes)
    log = settings.home / CRON_LOG
    variables = {**({"PATH": path_env} if path_env else {}),
                 **{k: v for k, v in (passed or {}).items() if k != "PATH"}}
    env = "".join(f"{name}={shlex.quote(value)} " for name, value in variables.items())
    tick = shlex.join([sys.executable, "-m", "outerloop", "tick", "--quiet",
                       "--home", str(settings.home)])
    command = f"{env}{tick} >> {shlex.quote(str(log))} 2>&1".replace("%", "\\%")
    return f"{when} {command} {CRON_MARKER}{settings.home}"


def _crontab() -> str:
    """The user's crontab as ``crontab -l`` prints it ("" when there is none)."""
    try:
        current = subprocess.run(["crontab", "-l"], capture_output=True, text=True,
                                 timeout=30, check=False)
    except FileNotFoundError:
        raise ConfigError("crontab is not installed; fix: install cron, or use "
                          "--mode resident (Slurm) or a systemd timer (deploy/systemd)") \
            from None
    return current.stdout if current.returncode == 0 else ""


def _write_crontab(lines: list[str]) -> str:
    text = "\n".join(lines) + "\n" if lines else ""
    done = subprocess.run(["crontab", "-"], input=text, capture_output=True, text=True,
                          timeout=30, check=False)
    if done.returncode != 0:
        raise ConfigError(f"crontab refused the new table: {done.stderr.strip()}")
    return text


def _is_ours(settings: Settings, line: str) -> bool:
    return line.endswith(f"{CRON_MARKER}{settings.home}")


def cron_removal(settings: Settings) -> str:
    """The command that removes this home's crontab line (what ``--install`` added)."""
    return shlex.join(["outerloop", "start", "--mode", "cron", "--uninstall", "--home",
                       str(settings.home)])


def install_cron(settings: Settings, line: str) -> str:
    """Replace this home's line in the user's crontab (others are kept). Raises
    ``ConfigError`` when ``crontab`` is missing or refuses."""
    kept = [ln for ln in _crontab().splitlines() if not _is_ours(settings, ln)]
    return _write_crontab([*kept, line])


def uninstall_cron(settings: Settings) -> list[str]:
    """Remove this home's line from the user's crontab (every other line is kept); the
    lines removed ([] when there was none, and the table is left untouched). Raises
    ``ConfigError`` when ``crontab`` is missing or refuses."""
    current = _crontab().splitlines()
    ours = [ln for ln in current if _is_ours(settings, ln)]
    if ours:
        _write_crontab([ln for ln in current if not _is_ours(settings, ln)])
    return ours
