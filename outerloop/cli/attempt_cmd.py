"""Internal commands run inside jobs: ``attempt start|wake RUN`` (a run's legs) and
``attempt measure`` (an eval pair).

A job stopped by a full disk or quota exits ``infra.NO_SPACE_EXIT`` (``_no_space_exit``):
the kernel reads that code as the machine's failure, not the run's, and waits for space
instead of counting the death against the run's recoveries. A job that finds the
deployment keeps the run from going on (``DeploymentError``: the scheduler refuses an
eval placement, the harness cannot start) exits ``infra.DEPLOY_EXIT`` after one
``infra.DEPLOY_PREFIX`` line naming the cause: the run waits for the operator's fix.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from outerloop import infra
from outerloop.cli.options import home_option
from outerloop.config import env_value, load_settings


def _no_space_exit(work: Callable[[], None]) -> None:
    """Run ``work``; if a full disk or quota stops it (an ``ENOSPC``/``EDQUOT`` error,
    however wrapped), say so on stderr if that can still be written and exit
    ``NO_SPACE_EXIT`` at once (``os._exit``: a flush of stdout onto the full disk at
    interpreter exit would turn the code into Python's 120). Output is flushed inside,
    so a full disk met while flushing is caught too."""
    from outerloop.errors import DeploymentError

    try:
        work()
        sys.stdout.flush()
        sys.stderr.flush()
    except DeploymentError as exc:
        click.echo(f"{infra.DEPLOY_PREFIX}{' '.join(str(exc).split())}", err=True)
        sys.stderr.flush()
        raise SystemExit(infra.DEPLOY_EXIT) from None
    except BaseException as exc:
        full = infra.no_space_error(exc)
        if full is None:
            raise
        try:
            where = f" writing {full.filename}" if full.filename else ""
            os.write(2, f"outerloop: {full.strerror}{where}: the job stops; the kernel "
                        f"waits for space and delivers the leg again\n".encode())
        except OSError:
            pass
        os._exit(infra.NO_SPACE_EXIT)


def _continue(run_id: str, home: Path | None) -> None:
    from outerloop.attempt.session import continue_run

    def leg() -> None:
        settings = load_settings(home)
        job_id = env_value("OUTERLOOP_JOB_ID") or env_value("SLURM_JOB_ID")
        click.echo(continue_run(settings, run_id, job_id))

    _no_space_exit(leg)


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

    def pair() -> None:
        code = run_pair(load_settings(home), run_id, job_name)
        if code:
            raise SystemExit(code)

    _no_space_exit(pair)


COMMANDS: list[click.Command] = [attempt]
