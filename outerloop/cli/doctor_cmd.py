"""``outerloop doctor``: a preflight of every precondition (``outerloop/doctor/``).

Prints one line per check (``ok``, ``warn`` or ``FAIL``, what was found, and for a
problem the fix) as each check finishes, or ``--json`` at the end; exits 1 if any check
failed (warnings do not).
"""

from __future__ import annotations

from pathlib import Path

import click

from outerloop.cli.json_out import emit, json_option
from outerloop.config import home_path, load_settings
from outerloop.doctor.pass_env import DRIVER_NAMES


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@json_option
@click.option("--driver", type=click.Choice(DRIVER_NAMES), default=None,
              help="The tick driver whose environment pass_env is checked in (default: "
                   "the drivers found running, else every driver the deploy files make).")
@click.option("--quick", is_flag=True, help="Skip the checks that run a job or a judge "
              "session (each is then a warning: not checked).")
def doctor(home: Path | None, as_json: bool, driver: str | None, quick: bool) -> None:
    """Check every precondition: home, disk, git, Slurm and each benchmark's placement,
    forge, agent CLI, model key and endpoint, the review panel (a dry judge run), the
    tick driver and its heartbeat, pass_env where the driver runs the tick, the sandbox
    and the setup lines on a compute node."""
    from outerloop.doctor import Check, Options, all_checks, iter_checks

    root = home_path(home)
    results: list[Check] = []
    if not root.is_dir():
        batches = iter([[Check("home", "fail", f"no home at {root}",
                               f"outerloop init --home {root}")]])
    else:
        batches = iter_checks(load_settings(root, require_home=False),
                              all_checks(Options(driver=driver, quick=quick)))
    for batch in batches:  # each check's lines as it finishes (the slow ones come last)
        results.extend(batch)
        if not as_json:
            for result in batch:
                click.echo(result.line())
    failed = any(r.status == "fail" for r in results)
    if as_json:
        emit(not failed, checks=[r.as_dict() for r in results])
    if failed:
        raise SystemExit(1)


COMMANDS: list[click.Command] = [doctor]
