"""``outerloop start``: keep ticks happening (resident Slurm chain, cron, or a local loop)."""

from __future__ import annotations

import shlex
import signal
import sys
import time
from pathlib import Path

import click

from outerloop.config import Settings, load_settings
from outerloop.errors import ConfigError


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@click.option("--mode", type=click.Choice(["resident", "cron", "local", "files"]),
              default=None,
              help="resident: a Slurm job chain (default with compute slurm); cron: a "
                   "crontab line; local: a foreground loop (default otherwise); files: "
                   "write deploy/ files for this home and interpreter into --out.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="files: the directory to write into.")
@click.option("--dry-run", is_flag=True, help="resident: print the sbatch line, submit nothing.")
@click.option("--install", is_flag=True, help="cron: install the line into your crontab.")
@click.option("--uninstall", is_flag=True,
              help="cron: remove this home's line from your crontab (others are kept).")
@click.option("--walltime-minutes", type=click.IntRange(1, 60 * 24 * 14), default=None,
              help="resident: each chain job's walltime (default 720).")
@click.option("--cadence-seconds", type=click.FloatRange(0.1), default=None, hidden=True)
@click.option("--in-job", is_flag=True, hidden=True)
@click.option("--ticks", type=click.IntRange(1), default=None, hidden=True)
def start(home: Path | None, mode: str | None, out: Path | None, dry_run: bool,
          install: bool, uninstall: bool, walltime_minutes: int | None,
          cadence_seconds: float | None, in_job: bool, ticks: int | None) -> None:
    """Start ticking every cadence, in the chosen mode."""
    from outerloop.kernel import start as modes

    settings = load_settings(home)
    if (install or uninstall) and mode != "cron":
        raise ConfigError("--install and --uninstall go with --mode cron; fix: outerloop "
                          "start --mode cron --install (or --uninstall)")
    mode = mode or ("resident" if settings.compute.kind == "slurm" else "local")
    cadence_s = cadence_seconds or settings.cadence.tick_minutes * 60
    walltime = walltime_minutes or modes.RESIDENT_WALLTIME_MINUTES
    if mode == "resident":
        if settings.compute.kind != "slurm":
            raise ConfigError("--mode resident needs [compute] kind = \"slurm\"; fix: set it, "
                              "or use --mode local / --mode cron")
        if in_job:
            modes.ResidentLoop(settings, walltime, cadence_seconds).run()
            return
        _start_resident(settings, walltime, cadence_seconds, dry_run)
    elif mode == "files":
        _write_files(settings, out)
    elif mode == "cron":
        from outerloop.config import env_value

        if install and uninstall:
            raise ConfigError("--install and --uninstall together; fix: give one of them")
        if uninstall:
            _uninstall_cron(settings)
            return
        line = modes.cron_line(settings, env_value("PATH"), _passed(settings, "the line"))
        if install:
            modes.install_cron(settings, line)
            click.echo(f"installed in your crontab:\n{line}\n"
                       f"remove it with: {modes.cron_removal(settings)}")
        else:
            click.echo(line)
    else:
        _local_loop(settings, cadence_s, ticks)


def _uninstall_cron(settings: Settings) -> None:
    from outerloop.kernel import start as modes

    removed = modes.uninstall_cron(settings)
    if removed:
        click.echo("removed from your crontab:\n" + "\n".join(removed))
    else:
        click.echo(f"no crontab line for {settings.home}; nothing removed")


def _passed(settings: Settings, where: str) -> dict[str, str]:
    """The ``pass_env`` values a driver must set for the tick, from this environment;
    each name unset here is named on stderr (jobs would not get it)."""
    from outerloop.compute import jobenv
    from outerloop.config import environ

    env = environ()
    for name in jobenv.unset_pass_env(settings.compute, env):
        click.echo(f"warning: [compute] pass_env names {name}, which is not set here, so "
                   f"{where} cannot pass it to jobs; fix: export {name} and run this "
                   f"again, or remove it from pass_env", err=True)
    return jobenv.passed_env(settings.compute, env)


def _write_files(settings: Settings, out: Path | None) -> None:
    from outerloop.config import env_value
    from outerloop.deploy_files import deploy_files

    if out is None:
        raise ConfigError("--mode files needs --out DIR; fix: outerloop start --mode files "
                          "--out ./deploy-mine")
    out.mkdir(parents=True, exist_ok=True)
    passed = _passed(settings, "the files")
    for name, text in deploy_files(settings, env_value("PATH"), passed).items():
        (out / name).write_text(text, encoding="utf-8")
        click.echo(f"wrote {out / name}")


def _start_resident(settings: Settings, walltime: int, cadence_s: float | None,
                    dry_run: bool) -> None:
    from outerloop.compute import jobscript
    from outerloop.kernel import start as modes

    spec = modes.resident_spec(settings, walltime, cadence_s)
    if dry_run:
        click.echo(shlex.join(jobscript.sbatch_argv(spec, jobscript.script_path(spec))))
        return
    from outerloop.compute.factory import make_compute

    compute = make_compute(settings)
    existing = [r.job_id for r in compute.queue() if r.name == spec.name]
    if existing:
        click.echo(f"a resident chain already runs for {settings.home}: job "
                   f"{', '.join(existing)} ({spec.name}); nothing submitted")
        return
    job_id = compute.submit(spec)
    click.echo(f"resident chain started: job {job_id} ({spec.name}), ticking every "
               f"{cadence_s or settings.cadence.tick_minutes * 60:g} s; log in "
               f"{spec.log_dir}; stop with: scancel --name={spec.name}")


def _local_loop(settings: Settings, cadence_s: float, ticks: int | None) -> None:
    """Tick every cadence in the foreground with a one-line status, sooner while jobs
    are live (``start.wait_s``, ``start.JobWatch``); Ctrl-C stops between or inside a
    tick (the tick lock is released either way)."""
    from outerloop.kernel import start as modes

    # Started with SIGINT ignored (a script's background job, `nohup ... &`), Python
    # installs no handler and Ctrl-C or `kill -INT` would never stop the loop.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    tty = sys.stdout.isatty()
    watch = modes.JobWatch(settings)

    def say(text: str) -> None:
        if tty:
            click.echo("\r\033[K" + text[:150], nl=False)

    done = 0
    try:
        from outerloop.kernel.tick import run_tick  # inside: Ctrl-C during the import stops too

        while True:
            done += 1
            prefix = f"tick {done}: "
            report = run_tick(settings, progress=lambda t: say(prefix + t))  # noqa: B023
            summary = f"tick {done}: {report.summary()}"
            for note in report.notes:
                summary += f" | note: {note}"
            if tty:
                say(summary)
                click.echo("")
            else:
                click.echo(summary)
            for failure in report.failures:
                click.echo(f"  failed: {failure}", err=True)
            if ticks is not None and done >= ticks:
                return
            live = watch.refresh()
            wake_at = time.monotonic() + modes.wait_s(cadence_s, len(live))
            while (left := wake_at - time.monotonic()) > 0:
                say(f"next tick in {int(left) // 60}:{int(left) % 60:02d} (Ctrl-C stops)")
                time.sleep(min(modes.JOB_POLL_S, left))
                if watch.one_ended():
                    break
    except KeyboardInterrupt:
        click.echo("\nstopped")


COMMANDS: list[click.Command] = [start]
