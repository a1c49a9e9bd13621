"""``outerloop help settings``: every operator setting, from the settings models.

Printed from ``config.py`` itself, so it is true for the installed version (a wheel
carries no docs/ directory): the ``outerloop.toml`` section and key, the default, the
``OUTERLOOP_*`` variable that overrides it, and what it is for.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

import click
from pydantic import BaseModel

from outerloop.config import ENV_PREFIX, TargetSettings, settings_sections
from outerloop.fleet_settings import AgentSlotSettings, EndpointSettings
from outerloop.kinds import names


def settings_reference() -> list[str]:
    """One block per ``outerloop.toml`` section, one line per key."""
    lines = ["outerloop.toml (precedence: flag > OUTERLOOP_* variable > file > default)", ""]
    for section, model in settings_sections().items():
        lines.append(f"[{section}]")
        lines.extend(_fields(section, model))
        lines.append("")
        for name, info in model.model_fields.items():
            nested = info.annotation
            if isinstance(nested, type) and issubclass(nested, BaseModel):
                lines.append(f"[{section}.{name}]  (unset fields fall back to [{section}])")
                lines.extend(_fields(f"{section}_{name}", nested))
                lines.append("")
    lines += ["[endpoints.NAME]  (repeatable; no OUTERLOOP_* variables)",
              *_plain_fields(EndpointSettings), "",
              "[[targets]]  (repeatable)", "  repo = \"owner/name\"  a repository to improve",
              "  self_initiated = false  not supported by this version; ignored",
              f"  agents = []  {TargetSettings.model_fields['agents'].description}",
              "[[targets.agents]]  (repeatable: one agent slot of the target above)",
              *_plain_fields(AgentSlotSettings), "",
              f"ledger_remote  ({ENV_PREFIX}LEDGER_REMOTE)  a git remote the ledger is pushed to"]
    return lines


def _fields(section: str, model: type[BaseModel]) -> list[str]:
    out = []
    for name, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            continue  # printed as its own [section.name] block
        default = "required" if info.is_required() else repr(info.get_default(
            call_default_factory=True))
        env = f"{ENV_PREFIX}{section.upper()}_{name.upper()}"
        what = f"  {info.description}" if info.description else ""
        choices = choices_of(info.annotation)
        allowed = f"  one of: {', '.join(choices)}" if choices else ""
        out.append(f"  {name} = {default}  ({env}){allowed}{what}")
    return out


def _plain_fields(model: type[BaseModel]) -> list[str]:
    """A model's keys for a section without environment overrides."""
    out = []
    for name, info in model.model_fields.items():
        choices = choices_of(info.annotation)
        allowed = f"  one of: {', '.join(choices)}" if choices else ""
        what = f"  {info.description}" if info.description else ""
        out.append(f"  {name} = {info.get_default(call_default_factory=True)!r}{allowed}{what}")
    return out


def choices_of(annotation: Any) -> tuple[str, ...]:
    """The names a setting allows when its type is a ``Literal`` (``kinds.py``), also
    inside ``| None``; empty for any other type."""
    for candidate in (annotation, *get_args(annotation)):
        if get_origin(candidate) is Literal:
            return names(candidate)
    return ()


@click.group("help")
def help_group() -> None:
    """Reference texts that ship with the installed version."""


@help_group.command("settings")
def settings() -> None:
    """Every outerloop.toml setting, its default and its OUTERLOOP_* variable."""
    for line in settings_reference():
        click.echo(line)


COMMANDS: list[click.Command] = [help_group]
