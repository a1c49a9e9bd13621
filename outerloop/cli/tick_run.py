"""``outerloop tick``'s body, and its way in without click.

The resident loop and cron start a tick every minute or so, nearly always a quiet one;
click and the command modules cost ~20 ms of its ~0.25 s. A plain tick line
(``plain_tick``) is run here without them; anything else (``--help``, a typo, an
option given twice) goes to click, which parses it and says what is wrong. Both ways
run ``run_tick_command``, so what a tick prints and its exit code are one code's.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from outerloop.cli.failures import failure_line
from outerloop.errors import OuterloopError

TICK_FAILED_EXIT = 1
ABORTED_EXIT = 1
"""A tick stopped with Ctrl-C: the code and the line click gives."""

Echo = Callable[[str, bool], None]
"""Print one line: to stderr when the flag is set."""


def run_tick_command(home: Path | None, quiet: bool, echo: Echo, as_json: bool = False) -> int:
    """Run one tick and print its report; the exit code: 1 when an action failed (or its
    outcome is unknown: it is settled next tick), 0 otherwise, including when another
    tick holds the lock or the home is paused. ``as_json``: the report as one envelope
    (``json_out``) on stdout, ``ok`` false when an action failed."""
    from outerloop import clock
    from outerloop.config import clock_offset_s, load_settings
    from outerloop.kernel.tick import run_tick

    clock.shift(clock_offset_s())  # a test hook: 0 unless a test set the tick host's clock
    settings = load_settings(home)
    report = run_tick(settings)
    for line in report.ledger_damage:  # loud, even with --quiet: every tick until whole
        echo(f"outerloop: {line}", True)
    for line in report.ledger_git_repaired:  # loud once: the tick that repaired it
        echo(f"outerloop: {line}", True)
    if as_json:
        from dataclasses import asdict

        from outerloop.cli.json_out import emit

        emit(not report.failures, summary=report.summary(), **asdict(report))
    elif not quiet or report.failures:
        echo(report.summary(), False)
        for note in report.notes:
            echo(f"  note: {note}", False)
        for failure in report.failures:
            echo(f"  failed: {failure}", True)
    return TICK_FAILED_EXIT if report.failures else 0


@dataclass(frozen=True)
class PlainTick:
    """A tick line as ``plain_tick`` read it."""

    home: Path | None
    quiet: bool
    debug: bool


def plain_tick(args: Sequence[str]) -> PlainTick | None:
    """``args`` when they are ``[--debug] tick [--home PATH | --home=PATH] [--quiet]``
    (the tick's options in either order, each at most once, a path not starting with
    ``-``); None for anything else: click parses it."""
    words = list(args)
    debug = bool(words) and words[0] == "--debug"
    if debug:
        words = words[1:]
    if not words or words[0] != "tick":
        return None
    home: Path | None = None
    quiet = seen_home = False
    rest = words[1:]
    while rest:
        word = rest.pop(0)
        if word == "--quiet" and not quiet:
            quiet = True
        elif word == "--home" and not seen_home and rest and not rest[0].startswith("-"):
            home, seen_home = Path(rest.pop(0)), True
        elif (word.startswith("--home=") and not seen_home
              and not word[len("--home="):].startswith("-")):
            home, seen_home = Path(word[len("--home="):]), True
        else:
            return None
    return PlainTick(home=home, quiet=quiet, debug=debug)


def _echo(text: str, err: bool) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


def run_plain(tick: PlainTick) -> tuple[int, bool]:
    """Run ``tick`` without click, failures worded as the click group words them; the
    exit code, and whether the tick ran to its end (then its process may leave without
    the interpreter's teardown: ``cli.FAST_EXIT``).

    The cyclic collector is off for the rest of this process: a tick is one short
    process, imports and folds make many objects and few cycles, and what cycles it
    leaves are freed at its exit (~20 ms of a quiet tick; the peak of a busy tick at
    100,000 runs unchanged: ``bench/busy_tick.py``)."""
    gc.disable()
    try:
        return run_tick_command(tick.home, tick.quiet, _echo), True
    except (OuterloopError, OSError) as exc:
        if isinstance(exc, BrokenPipeError):  # stdout closed early: as click leaves
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the flush at exit)
            return 1, False
        said = failure_line(exc)
        if said is None or tick.debug:
            raise
        _echo(said[0], True)
        return said[1], False
    except KeyboardInterrupt:
        _echo("\nAborted!", True)
        return ABORTED_EXIT, False
