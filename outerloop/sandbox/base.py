"""The sandbox seam: what a confined child may reach, and the ``Sandbox`` protocol.

A ``Sandbox`` turns the argv of a child that runs agent-authored code (an agent
session, a launched experiment, a gate eval, a review session) into an argv that
runs the same child confined to its ``Grants``: it reads the system and the
operator's declared paths, reads and writes only its own directories, and cannot
see the rest of the outerloop home (ledger, keys, cache, forge, config, other runs).
The network stays open. Backends: ``landlock``, ``bwrap`` and ``off``.

The kernel code that starts the child stays outside: a backend only ever wraps the
child's own argv.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from outerloop.errors import ConfigError
from outerloop.kinds import SandboxBackend

Kind = SandboxBackend
ENVIRONMENT_BROKEN = "environment broken"
"""How a trap's message starts (``traps.py``): the tick holds admission on it."""
CWD = "\0cwd\0"
"""A read-write grant standing for the shell's ``$PWD`` when the argv is rendered
into a job's shell command (``shell_words``): the task's checkout is chosen by the
shell (array tasks ``cd`` into ``<tree>/<task>``)."""


class SandboxError(ConfigError):
    """No sandbox can confine the child, or a grant would expose the home; the
    message names the fix."""


@dataclass(frozen=True)
class Grants:
    """What a confined child may reach besides the system paths.

    ``read_only`` and ``read_write`` are absolute, resolved paths (``policy.py``
    builds and checks them; missing read-write directories are created);
    ``cwd`` is the child's working directory."""

    read_only: tuple[str, ...]
    read_write: tuple[str, ...]
    cwd: str | None = None
    devices: tuple[str, ...] = ()
    """Device files the child may read and write when they exist where it runs
    (``/dev/null``, GPUs: a Slurm job's node may have devices the submit host lacks)."""
    user: tuple[int, int] | None = None
    """``(uid, gid)`` the child runs as (a root kernel's ``[sandbox] child_user``,
    ``uid.py``); None: the kernel's own uid, which is not root."""
    traverse: tuple[str, ...] = ()
    """Directories on the way to a grant only the job's shell knows (``CWD``: a
    launch's ``trees/<name>[/<task>]``): bwrap must create them enterable by ``user``."""


class Sandbox(Protocol):
    """One backend. ``wrap`` never starts anything; it only builds the argv."""

    @property
    def kind(self) -> Kind: ...

    def wrap(self, argv: Sequence[str], grants: Grants) -> list[str]:
        """``argv`` run confined to ``grants``."""
        ...


def shell_words(argv: Sequence[str]) -> str:
    """``argv`` as one shell command line, ``CWD`` rendered as ``"$PWD"``."""
    return " ".join('"$PWD"' if word == CWD else shlex.quote(word) for word in argv)
