"""(placeholder until the demo lands)"""

import click

COMMANDS: list[click.Command] = []
