"""Operator commands: init, tick, pause, resume, end (``status`` is ``status_cmd``)."""

from __future__ import annotations

from pathlib import Path

import click
import msgspec

from outerloop.cli.json_out import json_option
from outerloop.cli.options import home_option
from outerloop.config import (
    ComputeSettings,
    ForgeSettings,
    HarnessSettings,
    load_settings,
)
from outerloop.errors import OuterloopError
from outerloop.kinds import ComputeKind, ForgeKind, HarnessKind, names


def _default_kind(model: type[ForgeSettings | ComputeSettings | HarnessSettings]) -> str:
    """A settings section's default ``kind``, read off its field: an instance would build
    the model's validator, ~3 ms a model on every command's start (a tick's among them)."""
    return str(model.model_fields["kind"].default)


@click.command()
@home_option
@click.option("--forge", type=click.Choice(names(ForgeKind)), default=_default_kind(ForgeSettings),
              show_default=True, help="Where issues and pull requests live.")
@click.option("--compute", type=click.Choice(names(ComputeKind)),
              default=_default_kind(ComputeSettings), show_default=True, help="Where jobs run.")
@click.option("--harness", type=click.Choice(names(HarnessKind)),
              default=_default_kind(HarnessSettings), show_default=True,
              help="Which agent runs the sessions.")
@click.option("--target", "targets", multiple=True, metavar="OWNER/NAME",
              help="A repository to improve (repeatable).")
@click.option("--script", default=None, help="scripted harness: the YAML script to play.")
def init(home: Path | None, forge: str, compute: str, harness: str,
         targets: tuple[str, ...], script: str | None) -> None:
    """Create a home: outerloop.toml, keys/, the ledger repository."""
    from outerloop.config import home_path
    from outerloop.home import init_home

    root = home_path(home)
    settings = init_home(root, forge=forge, compute=compute, harness=harness,
                         targets=list(targets), script=script)
    click.echo(f"initialised {settings.home} (forge {forge}, compute {compute}, "
               f"harness {harness}; {len(targets)} target(s))")
    if settings.review.kind == "scripted":
        click.echo(f"review panel: the scripted judge {settings.review.script} (no model "
                   f"reads a change; for one, set [review] kind = \"claude\" or \"codex\")")
    else:
        click.echo(f"review panel: {settings.review.judges} {harness} judge session(s) "
                   f"per credited candidate")
    for step in next_steps(settings.home, forge, list(targets), compute):
        click.echo(step)


def next_steps(home: Path, forge: str, targets: list[str], compute: str = "local") -> list[str]:
    """What to run after ``init``, in order (a local forge starts empty); the tick
    driver named is the one that fits ``compute`` (the resident chain on Slurm)."""
    flag = f"--home {home}"
    steps = ["next steps:"]
    if not targets:
        steps.append(f"  add a [[targets]] repo = \"owner/name\" to {home}/outerloop.toml")
    if forge == "local":
        for repo in targets or ["OWNER/NAME"]:
            steps.append(f"  outerloop forge repo import PATH/TO/REPO --as {repo} {flag}")
        steps.append(f"  outerloop forge issue open --title ... --body \"...names one "
                     f"benchmark...\" {flag}")
    steps.append(f"  outerloop doctor {flag}")
    if compute == "slurm":
        steps.append(f"  outerloop start --mode resident {flag}   (a self-resubmitting Slurm "
                     f"job; stop it with the scancel line it prints)")
    else:
        steps.append(f"  outerloop start --mode local {flag}   (or one step: outerloop tick "
                     f"{flag})")
    steps.append(f"  or from cron: outerloop start --mode cron --install {flag}   (remove the "
                 f"line with: outerloop start --mode cron --uninstall {flag})")
    return steps


@click.command()
@home_option
@click.option("--quiet", is_flag=True, help="Print nothing unless something failed (cron).")
@json_option
def tick(home: Path | None, quiet: bool, as_json: bool) -> None:
    """Run one tick: observe, decide, act, record, exit. Exits 1 when an action failed
    (or its outcome is unknown: it is settled next tick), 0 otherwise, including when
    another tick holds the lock or the home is paused."""
    from outerloop.cli import FAST_EXIT
    from outerloop.cli.tick_run import run_tick_command

    code = run_tick_command(home, quiet, lambda text, err: click.echo(text, err=err), as_json)
    click.get_current_context().ensure_object(dict)[FAST_EXIT] = True
    if code:
        raise SystemExit(code)


@click.command()
@home_option
def pause(home: Path | None) -> None:
    """Stop all action: ticks only write a heartbeat until `resume`."""
    settings = load_settings(home)
    (settings.home / "PAUSE").touch()
    click.echo(f"paused: {settings.home / 'PAUSE'} exists; ticks take no action")


@click.command()
@home_option
def resume(home: Path | None) -> None:
    """Undo `pause`."""
    settings = load_settings(home)
    (settings.home / "PAUSE").unlink(missing_ok=True)
    click.echo("resumed: the next tick acts")


MAX_REASON_CHARS = 2000


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option("--reason", required=True, help="Why; it goes into the run's report.")
@home_option
def end(run_id: str, reason: str, home: Path | None) -> None:
    """End a run now (ending `operator`). The next tick cancels its live jobs and posts
    its report (with the reason) on its issue.

    The ending is appended to the run's target's tick file, never the run's own file
    (its jobs write that one), under the tick lock so no tick writes it at the same
    time; the first ending in the fold's order wins, so a run's job ending it a moment later
    changes nothing."""
    from outerloop.errors import NotFound
    from outerloop.kernel.lanes.common import end_run
    from outerloop.kernel.lock import TickLock
    from outerloop.ledger.book import LedgerWriter, LogicalClock, rebuild, tick_file
    from outerloop.ledger.state import Ending

    reason = reason.strip()
    if not reason:
        raise OuterloopError("--reason is empty; fix: say why the run ends, in a few words")
    settings = load_settings(home)
    lock = TickLock(settings.home, settings.cadence.tick_timeout_s)
    if not lock.acquire():
        holder = lock.holder.describe() if lock.holder else "an unknown holder"
        raise OuterloopError(f"a tick is running ({holder}); try again when it is done")
    try:
        state = rebuild(settings.home, save_cache=False)
        run = state.runs.get(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in {settings.home}; `outerloop status` "
                           f"lists the runs")
        if run.ended:
            raise OuterloopError(f"run {run_id} already ended ({run.ending}); nothing to do")
        why = f"Ended by the operator: {reason[:MAX_REASON_CHARS]}"
        event = end_run(run, Ending.OPERATOR, why, "operator")
        LedgerWriter(tick_file(settings.home, run.target), LogicalClock(state.clock)).append(
            msgspec.structs.replace(event.event, run=run.run_id))
    finally:
        lock.release()
    click.echo(f"ended {run_id} (operator); the next tick cancels its jobs and posts "
               f"its report")


COMMANDS: list[click.Command] = [init, tick, pause, resume, end]
