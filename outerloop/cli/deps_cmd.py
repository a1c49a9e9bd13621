"""``outerloop deps warm`` (internal): the detached process that builds one cache."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from outerloop.cli.options import home_option
from outerloop.config import load_settings


@click.group()
def deps() -> None:
    """The targets' dependency caches (`outerloop doctor` shows their state)."""


@deps.command("warm", hidden=True)
@click.argument("target")
@click.argument("key")
@click.option("--lock", "lock_path", required=True, help="The lock's path in the target.")
@click.option("--lock-fd", type=int, default=None, help="The key's lock, taken by the tick.")
@home_option
def warm_cmd(target: str, key: str, lock_path: str, lock_fd: int | None,
             home: Path | None) -> None:
    """Build TARGET's cache for KEY from the lock copy the tick wrote (on the tick host)."""
    from outerloop.deps.warm import run_warm

    sys.exit(run_warm(load_settings(home), target, key, lock_path, lock_fd))


COMMANDS: list[click.Command] = [deps]
