"""``[compute] pass_env``: is each name set where the tick runs?

Jobs get a ``pass_env`` variable by copying it from the process that submits them,
the tick (``compute/jobenv.py``); a name not set there is silently skipped. Where the
tick runs is the driver's doing, not the shell doctor runs in, so each driver's
environment is read from what the driver itself is made of:

- **cron**: cron gives a command only ``HOME``, ``LOGNAME``, ``SHELL`` and ``PATH``,
  plus ``NAME=value`` lines of the crontab and assignments leading the line itself
  (the installed crontab, else the line ``outerloop start --mode cron`` writes);
- **systemd**: the unit's ``Environment=`` and ``EnvironmentFile=`` (the installed
  ``outerloop-tick.service``, else the one ``--mode files`` writes);
- **resident**: the chain job's batch script (``scontrol write batch_script``), else
  the script ``outerloop start --mode resident`` would submit from this shell;
- **files**: ``resident.sbatch`` as ``--mode files`` writes it (submitted by hand
  with ``--export=NONE``);
- **local**: this shell (``outerloop tick`` by hand, ``start --mode local``).

Which drivers: ``--driver`` if given, else the drivers found running, else every one
the deploy files describe for this home. A variable set by a ``source`` or
``module load`` inside a script cannot be seen and counts as unset.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from outerloop.config import Settings, env_value, environ
from outerloop.doctor.base import Check, Options, fail, ok, run
from outerloop.doctor.driver import cron_lines, found_drivers, own_cron_line

CRON_GIVES = frozenset({"HOME", "LOGNAME", "SHELL", "PATH"})
ASSIGNMENT_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
UNIT = "outerloop-tick.service"
DRIVER_NAMES = ("cron", "systemd", "resident", "files", "local")


@dataclass(frozen=True)
class DriverEnv:
    """The names a driver's tick has set (non-empty), and where that was read."""

    driver: str
    source: str
    names: frozenset[str]
    fix: str
    """How to set a missing name there; ``{name}`` stands for it."""


def _assigned(words: list[str]) -> dict[str, str]:
    found = {}
    for word in words:
        match = ASSIGNMENT_RE.match(word)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _set(values: dict[str, str]) -> frozenset[str]:
    return frozenset(name for name, value in values.items() if value)


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def cron_names(lines: list[str], line: str) -> frozenset[str]:
    """What cron gives the command of ``line``: its own names, the crontab's
    ``NAME=value`` lines, the assignments leading the command (after ``env``)."""
    values = dict.fromkeys(CRON_GIVES, "cron")
    for text in lines:
        match = ASSIGNMENT_RE.match(text.strip())
        if match and not text.lstrip().startswith("#"):
            values[match.group(1)] = match.group(2).strip().strip("'\"")
    words = _split(line)
    command = words[1:] if words and words[0].startswith("@") else words[5:]
    if command and command[0] == "env":
        command = command[1:]
    for word in command:
        match = ASSIGNMENT_RE.match(word)
        if not match:
            break
        values[match.group(1)] = match.group(2)
    return _set(values)


def unit_names(text: str) -> frozenset[str]:
    """``Environment=`` assignments and ``EnvironmentFile=`` files of a unit."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        key, sep, value = raw.strip().partition("=")
        if not sep:
            continue
        if key == "Environment":
            values.update(_assigned(_split(value)))
        elif key == "EnvironmentFile":
            path = Path(value.strip().removeprefix("-"))
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            for line in lines:
                values.update(_assigned(_split(line.removeprefix("export "))))
    return _set(values)


def script_names(text: str, submitter: dict[str, str]) -> frozenset[str]:
    """``export`` lines and ``#SBATCH --export=`` items of a batch script (a bare name
    there is the submitter's value)."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#SBATCH") and "--export=" in line:
            items = line.split("--export=", 1)[1].split()[0].split(",")
            for item in items:
                name, sep, value = item.partition("=")
                if sep:
                    values[name] = value
                elif name == "ALL":
                    values.update(submitter)
                elif name not in ("NONE", "NIL"):
                    values[name] = submitter.get(name, "")
        elif line.startswith("export "):
            values.update(_assigned(_split(line)[1:]))
    return _set(values)


def _generated(settings: Settings) -> dict[str, str]:
    from outerloop.compute.jobenv import passed_env
    from outerloop.deploy_files import deploy_files

    return deploy_files(settings, env_value("PATH"), passed_env(settings.compute, environ()))


def _cron_env(settings: Settings) -> DriverEnv | None:
    lines = cron_lines(settings) or []
    line = own_cron_line(settings, lines)
    source = "the installed crontab line"
    if line is None:
        lines = _generated(settings)["outerloop.cron"].splitlines()
        line = next((ln for ln in lines if not ln.startswith("#")), None)
        source = "the line `outerloop start --mode cron` writes"
        if line is None:
            return None
    return DriverEnv("cron", source, cron_names(lines, line),
                     "cron gives the tick only HOME, LOGNAME, SHELL and PATH: add {name}=value "
                     "lines at the top of the crontab (`crontab -e`), or export them before "
                     "`outerloop start --mode cron --install` where that line carries them")


def _unit_env(settings: Settings) -> DriverEnv:
    installed = Path(environ().get("HOME", "~")).expanduser() / ".config/systemd/user" / UNIT
    try:
        text, source = installed.read_text(encoding="utf-8"), str(installed)
    except OSError:
        text, source = _generated(settings)[UNIT], f"the {UNIT} `--mode files` writes"
    return DriverEnv("systemd", source, unit_names(text),
                     f"add Environment={{name}}=value to [Service] of {UNIT}, then "
                     f"`systemctl --user daemon-reload`")


def _resident_env(settings: Settings, job: str) -> DriverEnv:
    fix = ("export {name} in the shell that runs `outerloop start --mode resident` (the chain "
           "copies pass_env from it), then restart the chain")
    if job:
        done = run(["scontrol", "write", "batch_script", job, "-"])
        if done is not None and done.returncode == 0:
            return DriverEnv("resident", f"the batch script of chain job {job}",
                             script_names(done.stdout, environ()), fix)
    from outerloop.compute import jobenv, jobscript
    from outerloop.kernel.start import RESIDENT_WALLTIME_MINUTES, resident_spec

    spec = jobenv.with_operator_settings(resident_spec(settings, RESIDENT_WALLTIME_MINUTES),
                                         settings.compute, environ())
    return DriverEnv("resident", "the job `outerloop start --mode resident` would submit "
                     "from this shell", script_names(jobscript.render_script(spec, environ()),
                                                     environ()), fix)


def _files_env(settings: Settings) -> DriverEnv:
    text = _generated(settings)["resident.sbatch"]
    return DriverEnv("files", "resident.sbatch as `outerloop start --mode files` writes it",
                     script_names(text, {}), "add `export {name}=value` to "
                     "resident.sbatch before its exec line")


def _local_env() -> DriverEnv:
    return DriverEnv("local", "this shell (`outerloop tick`, `start --mode local`)",
                     _set(environ()), "export {name} in the shell that runs outerloop")


def driver_envs(settings: Settings, driver: str | None) -> list[DriverEnv]:
    slurm = settings.compute.kind == "slurm"
    if driver is not None:
        wanted = [(driver, "")]
    else:
        found: list[tuple[str, str]] = [(d.kind, d.job) for d in found_drivers(settings)]
        wanted = found or [("cron", ""), ("systemd", ""),
                           *([("resident", ""), ("files", "")] if slurm else [])]
    envs = [_env_of(settings, kind, job) for kind, job in wanted]
    return [env for env in envs if env is not None]


def _env_of(settings: Settings, kind: str, job: str) -> DriverEnv | None:
    if kind == "cron":
        return _cron_env(settings)
    if kind == "systemd":
        return _unit_env(settings)
    if kind == "resident":
        return _resident_env(settings, job)
    if kind == "files":
        return _files_env(settings)
    return _local_env()


def check_pass_env(settings: Settings, options: Options) -> list[Check]:
    names = settings.compute.pass_env
    if not names:
        return [ok("pass_env", "no names listed ([compute] pass_env)")]
    checks = []
    passed = []
    for env in driver_envs(settings, options.driver):
        missing = [n for n in names if n not in env.names]
        if missing:
            them = "it" if len(missing) == 1 else "them"
            checks.append(fail(f"pass_env ({env.driver})",
                               f"{', '.join(missing)} not set where the {env.driver} driver "
                               f"runs the tick ({env.source}): every job would run without "
                               f"{them}", env.fix.format(name=missing[0])))
        else:
            passed.append(env.driver)
    if passed and not checks:
        checks.append(ok("pass_env", f"{', '.join(names)} set under {', '.join(passed)}"))
    return checks
