"""``outerloop archive list|restore RUN`` (and the job's internal ``archive run``)."""

from __future__ import annotations

from pathlib import Path

import click

from outerloop.cli.json_out import emit, json_option
from outerloop.cli.options import home_option
from outerloop.config import load_settings


@click.group()
def archive() -> None:
    """Ended runs in object storage ([archive] in outerloop.toml)."""


@archive.command("list")
@home_option
@json_option
def list_cmd(home: Path | None, as_json: bool) -> None:
    """Where each archived run went, according to the ledger."""
    from outerloop.archive.job import archived_runs

    rows = archived_runs(load_settings(home))
    if as_json:
        emit(runs=rows)
        return
    if not rows:
        click.echo("no run has been archived")
        return
    for row in rows:
        if row["where"] is None:
            click.echo(f"{row['run']}  not archived yet, last attempt failed: {row['error']}")
            continue
        local = ", restored" if row["restored_at"] else (", local copy present"
                                                          if row["local"] else "")
        click.echo(f"{row['run']}  {row['ending'] or ''}  {row['archived_at']}  "
                   f"{row['files']} files, {row['bytes']} bytes  -> {row['where']}{local}")


@archive.command()
@click.argument("run_id")
@home_option
def restore(run_id: str, home: Path | None) -> None:
    """Bring RUN_ID's files back into runs/ (and jobs/), verified byte for byte."""
    from outerloop.archive.job import restore_run

    result = restore_run(load_settings(home), run_id)
    click.echo(f"restored {result['files']} files of {run_id} from {result['where']}")


@archive.command("run", hidden=True)
@click.argument("run_id")
@click.option("--target", required=True, help="The run's target, owner/name.")
@home_option
def run_cmd(run_id: str, target: str, home: Path | None) -> None:
    """The archive job: pack, upload, verify, record, then delete RUN_ID's files."""
    from outerloop.archive.job import archive_run

    record = archive_run(load_settings(home), target, run_id)
    click.echo(f"archived {run_id} ({record.local_files} files) to {record.where}")


COMMANDS: list[click.Command] = [archive]
