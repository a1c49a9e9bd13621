"""Operator steering: ``outerloop message RUN TEXT``.

A message is one ``feedback`` event (kind ``operator message``, source ``operator-<key>``)
appended to the run's target's tick file under the tick lock, as ``end`` appends its
ending: one line, written whole or not at all, so nothing else need be made safe. The run's
next leg shows it (the wake, or the brief of a run that has not started), fenced and
attributed to the operator, and that leg's ``leg_ended`` marks it delivered; a run parked
in review is woken for it by the next tick, as for a reviewer's comment.

A retried command delivers once: the key is the text's digest (or ``--key``), the
command records nothing when the run already holds a message under that key, and the
fold keeps one entry per key (a race of two commands leaves two lines, one message).
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from outerloop.cli.options import home_option
from outerloop.config import Settings, load_settings
from outerloop.errors import NotFound, OuterloopError
from outerloop.ledger.state import OPERATOR_MESSAGE, OPERATOR_PREFIX, RunRecord, State

if TYPE_CHECKING:
    from outerloop.kernel.lock import TickLock

MAX_MESSAGE_CHARS = 4000
"""As long as an agent's own message may be; the wake quotes it whole."""
KEY_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
LOCK_WAIT_S = 60
"""How long the command waits for a running tick to let go of the lock."""
AUTHOR = "the operator"


def message_key(text: str) -> str:
    """The default key of a message: its text's digest, so the same words sent again to
    the same run (a retried command) are one message."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _checked_text(text: str, settings: Settings) -> str:
    from outerloop.sandbox.secrets import known_secrets, secrets_in

    text = text.strip()
    if not text:
        raise OuterloopError("the message is empty; fix: say what the agent should know")
    if len(text) > MAX_MESSAGE_CHARS:
        raise OuterloopError(f"the message is {len(text)} characters, over the "
                             f"{MAX_MESSAGE_CHARS} a wake quotes; fix: shorten it")
    if secrets_in(text, known_secrets(settings)):
        raise OuterloopError("the message carries the value of a secret this home holds "
                             "(keys/, a token); nothing recorded. fix: leave it out")
    return text


def lock_for_command(settings: Settings, wait_s: float) -> TickLock:
    from outerloop.kernel.lock import TickLock

    lock = TickLock(settings.home, settings.cadence.tick_timeout_s)
    deadline = time.monotonic() + wait_s
    while not lock.acquire():
        if time.monotonic() >= deadline:
            holder = lock.holder.describe() if lock.holder else "an unknown holder"
            raise OuterloopError(f"a tick is running ({holder}) and kept the lock for "
                                 f"{wait_s:g} s; nothing recorded. fix: run the command "
                                 f"again when it is done")
        time.sleep(0.5)
    return lock


def _live_run(state: State, run_id: str, settings: Settings) -> RunRecord:
    run = state.runs.get(run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r} in {settings.home}; `outerloop status` lists "
                       f"the runs")
    if run.ended:
        raise OuterloopError(f"run {run_id} already ended ({run.ending}); no leg will "
                             f"read a message. Nothing recorded")
    return run


def _where_it_goes(run: RunRecord) -> str:
    if run.legs == 0:
        return "its first leg's brief shows it"
    if run.pr_number is not None:
        return "its next leg shows it (a run waiting in review is woken by the next tick)"
    return "its next leg shows it (when its jobs end, or the next wake)"


@click.command()
@click.argument("run_id", metavar="RUN")
@click.argument("words", nargs=-1, required=True, metavar="TEXT")
@click.option("--key", default=None, help="The message's key (default: the text's digest). "
              "The same key is recorded once: pass a new one to send the same words again.")
@home_option
def message(run_id: str, words: tuple[str, ...], key: str | None, home: Path | None) -> None:
    """Send the run's agent a message: recorded in the ledger now, shown (fenced, as the
    operator's words) at the run's next leg. A retried command sends it once."""
    from outerloop.ledger import events as ev
    from outerloop.ledger.book import LedgerWriter, LogicalClock, rebuild, tick_file

    settings = load_settings(home)
    text = _checked_text(" ".join(words), settings)
    if key is not None and not KEY_RE.match(key):
        raise OuterloopError(f"--key {key!r}: use 1 to 64 letters, digits, '.', '_' or "
                             f"'-'")
    source = OPERATOR_PREFIX + (key or message_key(text))
    lock = lock_for_command(settings, LOCK_WAIT_S)
    try:
        state = rebuild(settings.home, save_cache=False)
        run = _live_run(state, run_id, settings)
        held = run.feedback.get(source)
        if held is None:
            event = ev.Feedback(source_id=source, author=AUTHOR, text=text,
                                source_kind=OPERATOR_MESSAGE, run=run.run_id)
            LedgerWriter(tick_file(settings.home, run.target),
                         LogicalClock(state.clock)).append(event)
    finally:
        lock.release()
    if held is not None:
        status = "delivered" if source in run.delivered else "waiting for its next leg"
        click.echo(f"already recorded for {run_id} at {held.at} under key "
                   f"{source.removeprefix(OPERATOR_PREFIX)} ({status}); nothing sent twice. "
                   f"To send it again, pass --key with a new key")
        return
    click.echo(f"recorded a message for {run_id} (key "
               f"{source.removeprefix(OPERATOR_PREFIX)}); {_where_it_goes(run)}")


COMMANDS: list[click.Command] = [message]
