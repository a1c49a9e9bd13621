"""What keeps ticks happening, and whether it has actually fired.

A driver is found three ways: this home's crontab line, the resident chain in the
queue, the systemd user timer. None found is a warning (doctor is also the preflight
before ``outerloop start``). A driver that is found is judged by what it does, not by
being there: a crontab line with no cron daemon running never fires (fail); the
evidence of a tick is the heartbeat every tick writes (``heartbeat.json``, its
``time``): none yet is a warning (a driver just installed fires within one period),
older than ``STALE_PERIODS`` cadences plus a tick's timeout is a failure (the driver
stopped)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok, run, warn
from outerloop.kernel.start import CRON_LOG, CRON_MARKER, RESIDENT_DIR, resident_name

DriverKind = Literal["cron", "resident", "systemd"]
STALE_PERIODS = 3
CRON_DAEMONS = frozenset({"cron", "crond", "fcron", "bcron-sched", "supercronic"})
"""Process names (``/proc/<pid>/comm``) of the cron daemons a login node runs."""
TIMER = "outerloop-tick.timer"


@dataclass(frozen=True)
class Driver:
    kind: DriverKind
    detail: str
    problem: str = ""
    """Why it cannot fire (a failure), empty when it can or it is not known."""
    waiting: str = ""
    """Why it has not fired yet though it will (a warning): a chain job pending."""
    job: str = ""
    """The resident chain's job id (its batch script holds the tick's environment)."""


def cron_lines(settings: Settings) -> list[str] | None:
    """The installed crontab (every line), None when there is none or no ``crontab``."""
    done = run(["crontab", "-l"])
    if done is None or done.returncode != 0:
        return None
    return done.stdout.splitlines()


def own_cron_line(settings: Settings, lines: list[str]) -> str | None:
    marker = f"{CRON_MARKER}{settings.home}"
    return next((ln for ln in lines if ln.rstrip().endswith(marker)
                 and not ln.lstrip().startswith("#")), None)


def cron_daemon(proc: Path = Path("/proc")) -> bool | None:
    """Whether a cron daemon runs on this host; None when other users' processes are
    hidden (``hidepid``) so it cannot be seen."""
    try:
        (proc / "1" / "comm").read_text(encoding="utf-8")
    except OSError:
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text(encoding="utf-8").strip() in CRON_DAEMONS:
                return True
        except OSError:
            continue
    return False


def _cron(settings: Settings) -> Driver | None:
    lines = cron_lines(settings)
    line = own_cron_line(settings, lines) if lines is not None else None
    if line is None:
        return None
    detail = f"crontab line {' '.join(line.split()[:5])}"
    daemon = cron_daemon()
    if daemon is False:
        return Driver("cron", detail, problem="no cron daemon runs on this host, so the "
                      "line never fires")
    if daemon is None:
        return Driver("cron", detail + " (whether a cron daemon runs cannot be seen here)")
    return Driver("cron", detail)


def _resident(settings: Settings) -> Driver | None:
    if settings.compute.kind != "slurm":
        return None
    name = resident_name(settings.home)
    done = run(["squeue", "--me", "-h", "-n", name, "-o", "%i %T %r"])
    if done is None or done.returncode != 0 or not done.stdout.strip():
        return None
    rows = [line.split(maxsplit=2) for line in done.stdout.strip().splitlines()]
    running = [r for r in rows if len(r) >= 2 and r[1] == "RUNNING"]
    if running:
        return Driver("resident", f"resident chain {name}: job {running[0][0]} RUNNING",
                      job=running[0][0])
    job = rows[0]
    reason = job[2] if len(job) > 2 else "no reason given"
    return Driver("resident", f"resident chain {name}: job {job[0]} {job[1]}",
                  waiting=f"the chain job waits in the queue ({reason})", job=job[0])


def _timer() -> Driver | None:
    done = run(["systemctl", "--user", "is-active", TIMER], timeout=10)
    if done is None or done.stdout.strip() != "active":
        return None
    return Driver("systemd", f"systemd user timer {TIMER} active")


def found_drivers(settings: Settings) -> list[Driver]:
    return [d for d in (_resident(settings), _cron(settings), _timer()) if d is not None]


def heartbeat_age_s(settings: Settings) -> int | None:
    """Seconds since the last tick's heartbeat (its ``time``, else the file's mtime);
    None when no tick ever ran."""
    from outerloop.clock import now
    from outerloop.kernel.lanes.common import seconds_since
    from outerloop.kernel.tick import HEARTBEAT_FILE

    beat = settings.home / HEARTBEAT_FILE
    try:
        stamp = json.loads(beat.read_text(encoding="utf-8")).get("time")
        if stamp:
            return max(0, round(seconds_since(str(stamp), now())))
        return max(0, round(now().timestamp() - beat.stat().st_mtime))
    except (OSError, ValueError, AttributeError):
        return None


def _log_of(settings: Settings, kind: DriverKind) -> str:
    return {"cron": str(settings.home / CRON_LOG),
            "resident": str(settings.home / RESIDENT_DIR) + "/",
            "systemd": "journalctl --user -u outerloop-tick.service"}[kind]


def _judge(settings: Settings, driver: Driver, age: int | None) -> Check:
    allowed_s = _allowed_s(settings)
    log = _log_of(settings, driver.kind)
    last = "no tick has run yet" if age is None else f"last tick {age} s ago"
    if driver.problem:
        return fail("tick driver", f"{driver.detail}: {driver.problem} ({last})",
                    "start the cron daemon (sudo systemctl enable --now cron), or drive "
                    "ticks another way: outerloop start --mode resident (Slurm) or the "
                    "systemd timer (docs/operate.md)")
    if driver.waiting and (age is None or age > allowed_s):
        return warn("tick driver", f"{driver.detail}: {driver.waiting} ({last})",
                    "wait for the job to start; `squeue --me` shows why it waits")
    if age is None:
        return warn("tick driver", f"{driver.detail}; {last}",
                    f"it should fire within {settings.cadence.tick_minutes} min; if it "
                    f"does not, read {log}")
    if age > allowed_s:
        return fail("tick driver", f"{driver.detail}; {last}, over {STALE_PERIODS} "
                    f"periods of {settings.cadence.tick_minutes} min: it is not firing",
                    f"read {log} for why; a tick by hand (`outerloop tick`) shows the "
                    f"error too")
    return ok("tick driver", f"{driver.detail}; {last}")


def check_tick_driver(settings: Settings) -> list[Check]:
    age = heartbeat_age_s(settings)
    drivers = found_drivers(settings)
    if drivers:
        return [_judge(settings, d, age) for d in drivers]
    start = ("outerloop start --mode resident (Slurm) or --mode cron --install; see "
             "docs/operate.md")
    if age is not None and age > _allowed_s(settings):
        # ticks ran and stopped: a resident chain cancelled (scancel, an admin, a
        # preemption that did not requeue) or a cron line removed
        return [fail("tick driver", f"no crontab line, resident chain or systemd timer "
                     f"found for this home, and the last tick was {age} s ago, over "
                     f"{STALE_PERIODS} periods of {settings.cadence.tick_minutes} min: ticks "
                     f"stopped (a resident chain cancelled, or a cron line removed)",
                     f"{start}; `sacct -X --name {resident_name(settings.home)}` shows how a "
                     f"resident chain ended")]
    last = "" if age is None else f"; last tick {age} s ago"
    return [warn("tick driver", "no crontab line, resident chain or systemd timer found for "
                 f"this home{last}", start)]


def _allowed_s(settings: Settings) -> int:
    """How old the last tick may be before its driver counts as stopped."""
    return STALE_PERIODS * settings.cadence.tick_minutes * 60 + settings.cadence.tick_timeout_s
