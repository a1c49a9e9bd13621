"""The ``outerloop`` command. Thin: parse, call into the packages, print.

Each command group lives in its own module here and is imported only when it is
run, so a job's ``outerloop attempt wake`` or a quiet ``outerloop tick`` does not pay
for every other command's imports. An ``OuterloopError`` becomes one line on stderr
and a non-zero exit (``--debug`` shows the traceback); so does a full disk.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from outerloop import __version__
from outerloop.errors import OuterloopError

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
"""A full disk or quota: one line, not a traceback (every write is whole or nothing)."""

COMMAND_MODULES: dict[str, str] = {
    "init": "kernel_cmd",
    "tick": "kernel_cmd",
    "status": "kernel_cmd",
    "pause": "kernel_cmd",
    "resume": "kernel_cmd",
    "end": "kernel_cmd",
    "message": "steer_cmd",
    "contract": "contract_cmd",
    "forge": "forge_cmd",
    "job": "job_cmd",
    "attempt": "attempt_cmd",
    "demo": "demo_cmd",
    "start": "start_cmd",
    "doctor": "doctor_cmd",
    "board": "board_cmd",
    "help": "help_cmd",
    "archive": "archive_cmd",
    "deps": "deps_cmd",
    "verify": "verify_cmd",
    "explain": "explain_cmd",
}


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMAND_MODULES.get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f"outerloop.cli.{module_name}")
        for command in module.COMMANDS:
            if command.name == cmd_name:
                return command  # type: ignore[no-any-return]
        return None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OuterloopError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"outerloop: {exc}", err=True)
            sys.exit(exc.exit_code)
        except OSError as exc:
            if exc.errno not in DISK_FULL or (ctx.obj and ctx.obj.get("debug")):
                raise
            where = f" writing {exc.filename}" if exc.filename else ""
            click.echo(f"outerloop: {exc.strerror or 'no space left on device'}{where}; "
                       f"nothing was half-written. fix: free space on that filesystem "
                       f"(df -h), then run the command again", err=True)
            sys.exit(1)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="outerloop")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """outerloop: run autonomous research agents against a benchmark, safely."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


FAST_EXIT = "fast_exit"
"""Set in ``ctx.obj`` by a command whose process may leave without tearing the
interpreter down (``tick``: everything it wrote is closed, synced and committed)."""


def entry(args: Sequence[str] | None = None) -> None:
    """The installed ``outerloop`` and ``python -m outerloop``: ``main``, and after a
    command that allows it (``FAST_EXIT``), leave at once. Tearing down a tick's
    interpreter (its modules and its fold's objects, freed one by one) costs ~0.06 s,
    a tenth of a quiet tick; tests call ``main`` and never get here."""
    obj: dict[str, Any] = {}
    try:
        main(args, obj=obj)
    except SystemExit as exc:
        if obj.get(FAST_EXIT):
            _leave(exc.code)
        raise


def _leave(code: object) -> None:
    """Exit with ``code`` as ``SystemExit`` would (None: 0, text: printed, 1) after the
    ``atexit`` handlers and the flush of stdout and stderr, skipping only the teardown.
    Returns (and the normal exit follows) while another thread is alive: it may still
    be writing."""
    import atexit
    import threading

    if threading.active_count() > 1:
        return
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe: leave as the normal exit would report it
        return
    os._exit(code or 0)
