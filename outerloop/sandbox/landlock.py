"""The ``landlock`` backend: an exec wrapper applies a Landlock ruleset, then execs.

The wrapper is ``landlock_exec.py`` run as a stdlib-only script by the kernel's own
interpreter (``python -I -S``): a separate exec rather than ``preexec_fn``, because
``preexec_fn`` is unsafe in a process with threads, and the wrapper costs one short
interpreter start (``bench/sandbox_startup.py``). Landlock needs no privileges and no
namespaces, so it also works inside Slurm jobs and containers.

Known gaps of Landlock (ABI 7), documented in ``docs/security.md``: metadata
(chmod, chown, utime) and ``stat`` of home paths are not covered. Pathname unix
sockets (munge, hence the scheduler) are refused by Landlock itself from ABI 9 and by
the wrapper's seccomp filter below it (``landlock_exec.unix_socket_filter``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.sandbox import landlock_exec
from outerloop.sandbox.base import Grants, Kind

WRAPPER = Path(landlock_exec.__file__).resolve()


def abi_version() -> int:
    """The running kernel's Landlock ABI (0: unavailable)."""
    try:
        return landlock_exec.abi_version()
    except (OSError, AttributeError):
        return 0


@dataclass(frozen=True)
class LandlockSandbox:
    """``python`` is the interpreter that runs the wrapper (the kernel's own by
    default; tests running as another user pass one that user can read)."""

    python: str = field(default_factory=lambda: sys.executable)
    wrapper: str = str(WRAPPER)

    @property
    def kind(self) -> Kind:
        return "landlock"

    def wrap(self, argv: Sequence[str], grants: Grants) -> list[str]:
        words = [self.python, "-I", "-S", self.wrapper]
        for path in grants.read_only:
            words += ["--ro", path]
        for path in grants.read_write:
            words += ["--rw", path]
        for path in grants.devices:
            words += ["--dev", path]
        if grants.user is not None:
            words += ["--user", f"{grants.user[0]}:{grants.user[1]}"]
        return [*words, "--", *argv]
