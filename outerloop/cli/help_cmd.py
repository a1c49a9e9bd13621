"""``outerloop help settings``: every operator setting, from the settings models.

Printed from ``config.py`` itself, so it is true for the installed version (a wheel
carries no docs/ directory): the ``outerloop.toml`` section and key, the default, the
``OUTERLOOP_*`` variable that overrides it, and what it is for.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args, get_origin

import click
from pydantic import BaseModel

from outerloop.cli.json_out import emit, json_option
from outerloop.config import ENV_PREFIX, TargetSettings, settings_sections
from outerloop.fleet_settings import AgentSlotSettings, EndpointSettings
from outerloop.kinds import names


@dataclass(frozen=True)
class Setting:
    """One key of ``outerloop.toml`` as ``help settings`` shows it."""

    section: str
    """``forge``, ``compute.kernel``, ``endpoints.NAME``, ``targets``, ... ("": top level)."""
    key: str
    default: str
    """As the file would spell it (``'local'``, ``None``, ``required``)."""
    env: str | None
    """The ``OUTERLOOP_*`` variable that overrides it (None: none does)."""
    choices: tuple[str, ...]
    description: str


def settings_table() -> list[Setting]:
    """Every key, in the reference's order."""
    rows: list[Setting] = []
    for section, model in settings_sections().items():
        rows.extend(_fields(section, section, model))
        for name, info in model.model_fields.items():
            nested = info.annotation
            if isinstance(nested, type) and issubclass(nested, BaseModel):
                rows.extend(_fields(f"{section}.{name}", f"{section}_{name}", nested))
    agents = TargetSettings.model_fields["agents"].description or ""
    return [*rows, *_fields("endpoints.NAME", None, EndpointSettings),
            Setting("targets", "repo", '"owner/name"', None, (), "a repository to improve"),
            Setting("targets", "self_initiated", "false", None, (),
                    "not supported by this version; ignored"),
            Setting("targets", "agents", "[]", None, (), agents),
            *_fields("targets.agents", None, AgentSlotSettings),
            Setting("", "ledger_remote", "None", f"{ENV_PREFIX}LEDGER_REMOTE", (),
                    "a git remote the ledger is pushed to")]


_HEADINGS = {"endpoints.NAME": "[endpoints.NAME]  (repeatable; no OUTERLOOP_* variables)",
             "targets": "[[targets]]  (repeatable)",
             "targets.agents": "[[targets.agents]]  (repeatable: one agent slot of the "
                               "target above)"}


def settings_reference() -> list[str]:
    """One block per ``outerloop.toml`` section, one line per key."""
    lines = ["outerloop.toml (precedence: flag > OUTERLOOP_* variable > file > default)"]
    rows = settings_table()
    sections = list(dict.fromkeys(r.section for r in rows))
    for section in sections:
        if section == "":
            lines.append("")
        elif section in _HEADINGS:
            lines += [""] if section != "targets.agents" else []
            lines.append(_HEADINGS[section])
        else:
            nested = "." in section
            lines += ["", f"[{section}]" + ("  (unset fields fall back to "
                                            f"[{section.split('.')[0]}])" if nested else "")]
        lines.extend(_line(r) for r in rows if r.section == section)
    return lines


def _line(row: Setting) -> str:
    if row.section == "":
        return f"{row.key}  ({row.env})  {row.description}"
    env = f"  ({row.env})" if row.env else ""
    allowed = f"  one of: {', '.join(row.choices)}" if row.choices else ""
    what = f"  {row.description}" if row.description else ""
    return f"  {row.key} = {row.default}{env}{allowed}{what}"


def _fields(section: str, env_prefix: str | None, model: type[BaseModel]) -> list[Setting]:
    """A model's keys; with ``env_prefix``, each one's ``OUTERLOOP_*`` variable."""
    out = []
    for name, info in model.model_fields.items():
        if env_prefix and isinstance(info.annotation, type) and issubclass(info.annotation,
                                                                           BaseModel):
            continue  # a [section.name] block of its own
        default = "required" if info.is_required() else repr(info.get_default(
            call_default_factory=True))
        env = f"{ENV_PREFIX}{env_prefix.upper()}_{name.upper()}" if env_prefix else None
        out.append(Setting(section, name, default, env, choices_of(info.annotation),
                           info.description or ""))
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
@json_option
def settings(as_json: bool) -> None:
    """Every outerloop.toml setting, its default and its OUTERLOOP_* variable."""
    if as_json:
        emit(settings=[asdict(row) for row in settings_table()])
        return
    for line in settings_reference():
        click.echo(line)


COMMANDS: list[click.Command] = [help_group]
