"""The names of each seam's backends, written once.

Each set of names is one ``Literal`` type here. The settings validate against it
(``config.py``: an unknown name is an error naming the field and the choices), the
CLI offers it (``click.Choice(names(...))``), ``outerloop help settings`` prints it, and
the factories dispatch on it with an exhaustive ``match`` (mypy fails when a name
has no backend). The factories import their backends lazily, so this module stays at
the bottom of the layering and ``config`` can use it without loading any backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Never, NoReturn, get_args

from outerloop.errors import ConfigError

ForgeKind = Literal["local", "github"]
"""Where issues and pull requests live (``forge/factory.py``)."""

ComputeKind = Literal["local", "slurm"]
"""Where jobs run (``compute/factory.py``)."""

LocalStart = Literal["exec", "fork"]
"""How a local job's runner and kernel command start (``compute/local_fork.py``)."""

ModelHarnessKind = Literal["claude", "codex"]
"""The agent CLIs that run a model (``harness/factory.py``); they run agent-written
code and so are never unconfined without the operator's explicit leave."""

HarnessKind = Literal["scripted", ModelHarnessKind]
"""Which agent runs the sessions: the operator's own script, or a model CLI."""

SandboxBackend = Literal["landlock", "bwrap", "off"]
"""The sandbox backends (``sandbox/``)."""

SandboxKind = Literal["auto", SandboxBackend]
"""What ``[sandbox] kind`` may ask for: a backend, or ``auto`` (landlock, else bwrap)."""

JobKind = Literal["kernel", "session", "launch", "eval"]
"""The kinds of job a placement (``[compute.<kind>]``) is set for."""
JOB_KINDS: tuple[JobKind, ...] = get_args(JobKind)

GpuRequest = Literal["gpus-per-node", "gres"]
"""How a job asks Slurm for GPUs (``--gpus-per-node`` or ``--gres=gpu:``)."""


def names(kind: object) -> tuple[str, ...]:
    """The names a ``Literal`` type allows, in the order written (nested ``Literal``
    types flattened): what ``click.Choice`` offers and the help text lists."""
    out: list[str] = []
    for arg in get_args(kind):
        out.extend(names(arg) if get_args(arg) else [arg])
    return tuple(out)


def unknown(field: str, value: Never, kind: object) -> NoReturn:
    """A factory's last branch: ``value`` has no backend. Typed ``Never`` so mypy fails
    when a name of ``kind`` has no branch; at run time (settings built around the
    validation) the error names the field and its choices."""
    raise ConfigError(f"{field} = {value!r} is not one of {', '.join(names(kind))}; "
                      f"fix: set {field} to one of them")


@dataclass(frozen=True)
class ModelCli:
    """What the kernel knows of one model CLI before it is installed."""

    binary: str
    """The executable's name when ``[harness] binary`` is unset."""
    package: str
    """The npm package that installs it (the fix ``doctor`` names)."""
    endpoint: str
    """The model API it talks to when ``[harness] base_url`` is unset."""


MODEL_CLIS: dict[ModelHarnessKind, ModelCli] = {
    "claude": ModelCli("claude", "@anthropic-ai/claude-code", "https://api.anthropic.com"),
    "codex": ModelCli("codex", "@openai/codex", "https://api.openai.com/v1"),
}
