"""The ``outerloop`` click group: each command group lives in its own module here and
is imported only when it is run, so a job's ``outerloop attempt wake`` does not pay for
every other command's imports. An ``OuterloopError`` becomes one line on stderr and a
non-zero exit (``--debug`` shows the traceback); so does a full disk (``failures.py``).
A command line with ``--json`` gets that error, and click's own (a bad argument), as one
JSON object on stdout with the same exit code (``json_out.py``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from outerloop import __version__
from outerloop.cli.failures import PREFIX, failure_line
from outerloop.cli.json_out import error_kind, error_text, wants_json
from outerloop.errors import OuterloopError

COMMAND_MODULES: dict[str, str] = {
    "init": "kernel_cmd",
    "tick": "kernel_cmd",
    "status": "status_cmd",
    "pause": "kernel_cmd",
    "resume": "kernel_cmd",
    "end": "kernel_cmd",
    "message": "steer_cmd",
    "line": "line_cmd",
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


_JSON_META = "outerloop.json"
"""``ctx.meta`` key: the command line asked for ``--json``."""


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

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_JSON_META] = wants_json(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        as_json = bool(ctx.meta.get(_JSON_META))
        try:
            return super().invoke(ctx)
        except (OuterloopError, OSError) as exc:
            said = failure_line(exc)
            if said is None or (ctx.obj and ctx.obj.get("debug")):
                raise
            if as_json:
                click.echo(error_text(said[0].removeprefix(PREFIX), error_kind(exc),
                                      said[1]))
            else:
                click.echo(said[0], err=True)
            sys.exit(said[1])
        except click.ClickException as exc:
            if not as_json:
                raise
            kind = "UsageError" if isinstance(exc, click.UsageError) else type(exc).__name__
            click.echo(error_text(exc.format_message(), kind, exc.exit_code))
            sys.exit(exc.exit_code)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="outerloop")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """outerloop: run autonomous research agents against a benchmark, safely."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
