"""Options more than one command module takes (kept apart so a command importing one
does not import another command's module)."""

from __future__ import annotations

from pathlib import Path

import click

home_option = click.option(
    "--home", type=click.Path(path_type=Path), default=None,
    help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).",
)
