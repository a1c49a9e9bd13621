"""What keeps ticks happening: a crontab line, the resident chain, or a systemd timer.
Missing is a warning (doctor is also the preflight before `outerloop start`)."""

from __future__ import annotations

import json
import time

from outerloop.config import Settings
from outerloop.doctor.base import Check, ok, run, warn
from outerloop.kernel.start import CRON_MARKER, resident_name


def _cron(settings: Settings) -> str | None:
    done = run(["crontab", "-l"])
    if done is None or done.returncode != 0:
        return None
    lines = [ln for ln in done.stdout.splitlines()
             if ln.rstrip().endswith(f"{CRON_MARKER}{settings.home}") and not ln.startswith("#")]
    return f"crontab line: {lines[0].split(' ', 5)[:5]}" if lines else None


def _resident(settings: Settings) -> str | None:
    if settings.compute.kind != "slurm":
        return None
    name = resident_name(settings.home)
    done = run(["squeue", "--me", "-h", "-n", name, "-o", "%i %T"])
    if done is None or done.returncode != 0 or not done.stdout.strip():
        return None
    return f"resident chain {name}: job {done.stdout.split()[0]} {done.stdout.split()[1]}"


def _timer() -> str | None:
    done = run(["systemctl", "--user", "is-active", "outerloop-tick.timer"], timeout=10)
    if done is None or done.stdout.strip() != "active":
        return None
    return "systemd user timer outerloop-tick.timer active"


def check_tick_driver(settings: Settings) -> list[Check]:
    found = _resident(settings) or _cron(settings) or _timer()
    beat = settings.home / "heartbeat.json"
    age = ""
    if beat.exists():
        try:
            age = f"; last tick {int(time.time() - beat.stat().st_mtime)} s ago"
            json.loads(beat.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            age = ""
    if found:
        return [ok("tick driver", found + age)]
    return [warn("tick driver", "no crontab line, resident chain or systemd timer found for "
                 f"this home{age}", "outerloop start --mode resident (Slurm) or --mode cron "
                 "--install; see docs/operate.md")]
