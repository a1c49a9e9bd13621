"""The ``outerloop`` click group: each command group lives in its own module here and
is imported only when it is run, so a job's ``outerloop attempt wake`` does not pay for
every other command's imports. An ``OuterloopError`` becomes one line on stderr and a
non-zero exit (``--debug`` shows the traceback); so does a full disk (``failures.py``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from outerloop import __version__
from outerloop.cli.failures import failure_line
from outerloop.errors import OuterloopError

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
        except (OuterloopError, OSError) as exc:
            said = failure_line(exc)
            if said is None or (ctx.obj and ctx.obj.get("debug")):
                raise
            click.echo(said[0], err=True)
            sys.exit(said[1])


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="outerloop")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """outerloop: run autonomous research agents against a benchmark, safely."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
