"""The files of ``deploy/``, rendered for this home and for the interpreter outerloop is
installed in (``outerloop start --mode files --out DIR``), so no driver ever falls
back to a system ``python3`` that lacks outerloop. Pure: settings in, texts out.

Each file carries the ``[compute] pass_env`` values (``passed``: read where the files
are made): jobs copy those names from the tick's environment, and cron, systemd and a
hand-submitted ``sbatch --export=NONE`` start the tick with none of the operator's."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping

from outerloop.config import Settings, override_variables
from outerloop.kernel.start import (
    RESIDENT_WALLTIME_MINUTES,
    cron_line,
    cron_removal,
    resident_name,
)


def _driver_env(path_env: str | None, passed: Mapping[str, str]) -> dict[str, str]:
    """What a driver sets for the tick: the PATH it was made with, then ``passed``."""
    return {**({"PATH": path_env} if path_env else {}),
            **{k: v for k, v in passed.items() if k != "PATH"}}


def _resident_sbatch(settings: Settings, python: str, env: Mapping[str, str]) -> str:
    c = settings.compute.placement("kernel")
    options = [f"--{flag}={value}" for flag, value in (
        ("partition", c.partition), ("account", c.account), ("qos", c.qos),
        ("constraint", c.constraint)) if value] + list(c.extra_sbatch or [])
    walltime = min(RESIDENT_WALLTIME_MINUTES, c.time_minutes or RESIDENT_WALLTIME_MINUTES)
    lines = [
        "#!/bin/bash",
        "# The resident outerloop chain for this home, rendered by",
        "# `outerloop start --mode files`; `outerloop start --mode resident` submits the",
        "# same job and refuses a second chain. Submit by hand with:",
        f"#   sbatch --export=NONE {shlex.quote(str(settings.home))}/resident.sbatch",
        f"#SBATCH --job-name={resident_name(settings.home)}",
        f"#SBATCH --time={walltime}",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        "#SBATCH --dependency=singleton",
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={settings.home}/resident/slurm-%j.out",
        *(f"#SBATCH {option}" for option in options),
        "set -euo pipefail",
        *settings.compute.setup,
        f"export OUTERLOOP_HOME={shlex.quote(str(settings.home))}",
        *(f"export {k}={shlex.quote(v)}" for k, v in sorted(override_variables().items())),
        *(f"export {k}={shlex.quote(v)}" for k, v in env.items()),
        f"exec {shlex.quote(python)} -m outerloop start --mode resident --in-job "
        f"--home \"$OUTERLOOP_HOME\" --walltime-minutes {walltime}",
    ]
    return "\n".join(lines) + "\n"


def _systemd_value(text: str) -> str:
    """``text`` inside a double-quoted systemd ``Environment=`` assignment."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def _service(settings: Settings, python: str, env: Mapping[str, str]) -> str:
    environment = "".join(f'Environment="{_systemd_value(f"{k}={v}")}"\n'
                          for k, v in env.items())
    return (
        "# One outerloop tick, started by outerloop-tick.timer (user units):\n"
        "#   cp outerloop-tick.* ~/.config/systemd/user/ && systemctl --user daemon-reload\n"
        "#   systemctl --user enable --now outerloop-tick.timer; loginctl enable-linger $USER\n"
        "[Unit]\nDescription=outerloop tick (observe, decide, act, record)\n"
        "After=network-online.target\nWants=network-online.target\n\n"
        "[Service]\nType=oneshot\n"
        f"Environment=OUTERLOOP_HOME={settings.home}\n"
        f"{environment}"
        f"ExecStart={python} -m outerloop tick --quiet\n"
        "TimeoutStartSec=15min\nNice=5\n")


def _timer(settings: Settings) -> str:
    minutes = settings.cadence.tick_minutes
    return (f"[Unit]\nDescription=outerloop tick every {minutes} minutes\n\n"
            f"[Timer]\nOnBootSec=2min\nOnUnitActiveSec={minutes}min\nPersistent=true\n"
            f"AccuracySec=30s\n\n[Install]\nWantedBy=timers.target\n")


def deploy_files(settings: Settings, path_env: str | None, passed: Mapping[str, str],
                 python: str | None = None) -> dict[str, str]:
    """File name -> text: ``resident.sbatch``, ``outerloop.cron`` (when the cadence
    fits cron), ``outerloop-tick.service``, ``outerloop-tick.timer``; ``passed``: the
    ``pass_env`` values each driver sets for the tick (``jobenv.passed_env``)."""
    python = python or sys.executable
    env = _driver_env(path_env, passed)
    files = {"resident.sbatch": _resident_sbatch(settings, python, env),
             "outerloop-tick.service": _service(settings, python, env),
             "outerloop-tick.timer": _timer(settings)}
    from outerloop.errors import ConfigError

    try:
        files["outerloop.cron"] = (
            "# install: " + shlex.join(["outerloop", "start", "--mode", "cron", "--install",
                                        "--home", str(settings.home)]) + "\n"
            f"# remove:  {cron_removal(settings)}\n"
            + cron_line(settings, path_env, passed) + "\n")
    except ConfigError as exc:
        files["outerloop.cron"] = f"# no crontab line: {exc}\n"
    return files
