"""``outerloop verify``: check every ledger file's hash chain and attested head."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from outerloop.cli.json_out import emit, json_option

MAX_SHOWN = 200


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@json_option
def verify(home: Path | None, as_json: bool) -> None:
    """Check the ledger: each line chains from the one before, each file's attested
    head is there. Names the file and line of each break; exits 1 when any."""
    from outerloop.config import home_path
    from outerloop.errors import ConfigError
    from outerloop.ledger.book import verify_home

    where = home_path(home)
    if not where.is_dir():
        raise ConfigError(f"home {where} does not exist; fix: give --home, or run "
                          f"`outerloop init` first")
    report = verify_home(where)
    if as_json:
        emit(report.ok, report.as_json())
    else:
        for problem in report.problems[:MAX_SHOWN]:
            click.echo(problem.text())
        if len(report.problems) > MAX_SHOWN:
            click.echo(f"... and {len(report.problems) - MAX_SHOWN} more (--json lists all)")
        for mismatch in report.index:
            click.echo(f"history index: {mismatch}")
        for note in report.notes[:MAX_SHOWN]:
            click.echo(f"note: {note}")
        click.echo(report.summary())
    if not report.ok:
        sys.exit(1)


COMMANDS = [verify]
