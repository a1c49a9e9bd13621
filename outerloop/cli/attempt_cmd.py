"""Internal commands run inside jobs: ``attempt start|wake RUN`` (a run's legs)."""

from __future__ import annotations

from pathlib import Path

import click

from outerloop.cli.kernel_cmd import home_option
from outerloop.config import env_value, load_settings


def _continue(run_id: str, home: Path | None) -> None:
    from outerloop.attempt.session import continue_run

    settings = load_settings(home)
    job_id = env_value("OUTERLOOP_JOB_ID") or env_value("SLURM_JOB_ID")
    click.echo(continue_run(settings, run_id, job_id))


@click.group(hidden=True)
def attempt() -> None:
    """A run's kernel legs (run by climb and wake jobs, not by hand)."""


@attempt.command()
@click.argument("run_id")
@home_option
def start(run_id: str, home: Path | None) -> None:
    """First leg of RUN_ID: channel, brief, session, then act on what it staged."""
    _continue(run_id, home)


@attempt.command()
@click.argument("run_id")
@home_option
def wake(run_id: str, home: Path | None) -> None:
    """Next step of RUN_ID after its jobs ended (or after a crash): see session.py."""
    _continue(run_id, home)


@attempt.command()
@click.argument("run_id")
@click.argument("job_name")
@home_option
def measure(run_id: str, job_name: str, home: Path | None) -> None:
    """Run eval pair JOB_NAME of RUN_ID: both sides in turn (see attempt/measure.py)."""
    from outerloop.attempt.measure import run_pair

    code = run_pair(load_settings(home), run_id, job_name)
    if code:
        raise SystemExit(code)


COMMANDS: list[click.Command] = [attempt]
