"""``outerloop job``: the local compute backend's runner entry point and a viewer.

``job run`` is what ``LocalCompute.submit`` starts in the background; people do not
call it. ``job show`` and ``job queue`` let an operator look at local jobs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from outerloop import config
from outerloop.cli.json_out import emit, json_option
from outerloop.compute.base import JobState, check_job_id
from outerloop.compute.local import LocalCompute
from outerloop.errors import NotFound

_JOBS_DIR_HELP = "Local jobs directory (default: the home's jobs/)."


def _jobs_dir(value: Path | None) -> Path:
    return value if value is not None else config.home_path() / "jobs"


def _job_id(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return check_job_id(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group(name="job")
def job() -> None:
    """Local compute jobs (compute = "local"): show them, list them."""


@job.command(name="run", hidden=True)
@click.option("--jobs-dir", type=click.Path(path_type=Path, file_okay=False), required=True)
@click.option("--signalled", is_flag=True, hidden=True,
              help="The job's gate was terminated before it handed over.")
@click.argument("job_id", callback=_job_id)
def run(jobs_dir: Path, job_id: str, signalled: bool) -> None:
    """Run one submitted job to its end (started by LocalCompute.submit, or exec'd by
    the job's gate, compute/local_gate.sh)."""
    from outerloop.compute.local_runner import run_job

    sys.exit(run_job(jobs_dir, job_id, signalled=signalled))


@job.command(name="show")
@click.option("--jobs-dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help=_JOBS_DIR_HELP)
@click.argument("job_id", callback=_job_id)
@json_option
def show(jobs_dir: Path | None, job_id: str, as_json: bool) -> None:
    """Show one job's state, exit code, time, tasks and where its output is."""
    compute = LocalCompute(_jobs_dir(jobs_dir))
    obs = compute.observe([job_id])[job_id]
    if obs.state == JobState.GONE:
        raise NotFound(f"no local job {job_id} under {compute.jobs_dir}; "
                       f"fix: check the id or pass --jobs-dir")
    parent = job_id.partition("_")[0]
    if as_json:
        emit(job=obs.model_dump(mode="json"), record=str(compute.job_dir(parent)))
        return
    click.echo(f"job       {obs.job_id}  {obs.name or ''}")
    click.echo(f"state     {obs.state.value}")
    click.echo(f"exit code {'-' if obs.exit_code is None else obs.exit_code}")
    click.echo(f"elapsed   {obs.elapsed_s} s")
    if obs.reason:
        click.echo(f"reason    {obs.reason}")
    for task, state in sorted(obs.tasks.items()):
        click.echo(f"task {task:<4} {state.value}")
    click.echo(f"record    {compute.job_dir(parent)}")


@job.command(name="queue")
@click.option("--jobs-dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help=_JOBS_DIR_HELP)
@json_option
def queue(jobs_dir: Path | None, as_json: bool) -> None:
    """List local jobs that have not ended, like squeue."""
    rows = LocalCompute(_jobs_dir(jobs_dir)).queue()
    if as_json:
        emit(jobs=[row.model_dump(mode="json") for row in rows])
        return
    click.echo("JOBID|NAME|STATE|TIME|PARTITION|SUBMIT|REASON|TIME_LIMIT")
    for row in rows:
        click.echo("|".join([row.job_id, row.name, row.state.value.upper(), row.elapsed,
                             row.partition, row.submitted, row.reason, row.limit]))


COMMANDS: list[click.Command] = [job]
