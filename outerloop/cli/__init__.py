"""The ``outerloop`` command. Thin: parse, call into the packages, print.

Each command group lives in its own module here; this file only assembles them
and turns an ``OuterloopError`` into one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from outerloop import __version__
from outerloop.errors import OuterloopError


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OuterloopError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"outerloop: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="outerloop")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """outerloop: run autonomous research agents against a benchmark, safely."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _register() -> None:
    from outerloop.cli import attempt_cmd, contract_cmd, forge_cmd, job_cmd, kernel_cmd

    for module in (attempt_cmd, contract_cmd, forge_cmd, job_cmd, kernel_cmd):
        for command in module.COMMANDS:
            main.add_command(command)


_register()
