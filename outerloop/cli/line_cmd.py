"""``outerloop line reset TARGET AGENT``: start an agent slot's research line afresh.

A line that has gone stale (a dead end, a memory that misleads) is not rewritten or
deleted: the slot's next run starts a new line from the base, on the slot's next line
branch (``agents/<agent-id>-L2``, ``-L3``...: ``line_paths.line_branch``), with no
memory; the old line stays on the forge as it is, for anyone to read. One
``line_reset`` event in the target's tick file, under the tick lock. A run of the slot
already running keeps its line; the reset is for the next one."""

from __future__ import annotations

import re
from pathlib import Path

import click

from outerloop.cli.options import home_option
from outerloop.cli.steer_cmd import LOCK_WAIT_S, lock_for_command
from outerloop.config import load_settings
from outerloop.errors import NotFound, OuterloopError

AGENT_RE = re.compile(r"^agent-[0-9]{2,3}$")

@click.group()
def line() -> None:
    """Research lines (docs/operate.md, "Research lines")."""


@line.command("reset")
@click.argument("target", metavar="OWNER/NAME")
@click.argument("agent", metavar="AGENT")
@click.option("--reason", default="", help="Why the line starts afresh (kept in the ledger).")
@home_option
def reset(target: str, agent: str, reason: str, home: Path | None) -> None:
    """Start AGENT's research line on OWNER/NAME afresh: its next run starts a new line
    from the base (the next ``agents/<agent>-L<n>`` branch); the old line stays on the
    forge. Safe to run twice only on purpose: each call starts one more line."""
    from outerloop.ledger import events as ev
    from outerloop.ledger.book import LedgerWriter, LogicalClock, rebuild, tick_file
    from outerloop.line_paths import line_branch

    settings = load_settings(home)
    if target not in [t.repo for t in settings.targets]:
        raise NotFound(f"{target!r} is not a target of {settings.home}; fix: name one of "
                       f"{', '.join(t.repo for t in settings.targets) or '(none)'}")
    if not AGENT_RE.match(agent):
        raise OuterloopError(f"{agent!r} is not an agent slot's name; fix: name it as "
                             f"`outerloop status` shows it (agent-01, agent-02...)")
    if len(reason) > 500:
        raise OuterloopError("--reason is over 500 characters; fix: say it in fewer words")
    lock = lock_for_command(settings, LOCK_WAIT_S)
    try:
        state = rebuild(settings.home, save_cache=False)
        resets = state.line_resets.get((target, agent), 0)
        LedgerWriter(tick_file(settings.home, target), LogicalClock(state.clock)).append(
            ev.LineReset(target=target, agent=agent, reason=reason.strip()))
    finally:
        lock.release()
    click.echo(f"{agent}'s next run on {target} starts a new line, "
               f"{line_branch(agent, resets + 1)}, from the base; "
               f"{line_branch(agent, resets)} stays on the forge as it is")


COMMANDS: list[click.Command] = [line]
