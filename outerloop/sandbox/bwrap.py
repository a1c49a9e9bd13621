"""The ``bwrap`` backend: bubblewrap builds a mount namespace holding only the grants.

Nothing of the home is mounted except the child's own read-write directories, so the
ledger, keys and other runs are simply absent (ENOENT). ``--cap-drop ALL`` always:
as root bwrap otherwise keeps every capability, and the child could unmount its
tmpfs or remount ``/`` read-write. ``--unshare-pid`` hides the kernel's processes;
``--die-with-parent`` ends the sandbox with its starter. Needs unprivileged user
namespaces (or root). A bwrap cannot start inside Landlock or inside a root bwrap
with capabilities dropped, so agent CLIs run with their own sandboxes off inside ours.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from outerloop.sandbox.base import CWD, Grants, Kind

BINARY = "bwrap"
DEVICE_PREFIX = "/dev/"
BWRAP_DEVICES = frozenset({"/dev/null", "/dev/shm", "/dev/full", "/dev/zero", "/dev/random",
                           "/dev/urandom"})
"""Provided by ``--dev /dev`` (and ``--tmpfs /dev/shm``) already."""


def find_bwrap() -> str | None:
    return shutil.which(BINARY) or (f"/usr/bin/{BINARY}" if os.path.isfile(
        f"/usr/bin/{BINARY}") else None)


@dataclass(frozen=True)
class BwrapSandbox:
    binary: str = "/usr/bin/bwrap"

    @property
    def kind(self) -> Kind:
        return "bwrap"

    def wrap(self, argv: Sequence[str], grants: Grants) -> list[str]:
        words = [self.binary, "--unshare-pid", "--unshare-ipc", "--die-with-parent",
                 "--cap-drop", "ALL", "--dev", "/dev", "--tmpfs", "/dev/shm",
                 "--proc", "/proc", "--tmpfs", "/tmp"]
        for path in grants.read_only:
            if path.startswith(DEVICE_PREFIX) or path == "/proc":
                continue
            if os.path.islink(path) and not os.path.isabs(os.readlink(path)):
                words += ["--symlink", os.readlink(path), path]
            else:
                words += ["--ro-bind-try", path, path]
        for path in grants.read_write:
            words += ["--bind", path, path]
        for path in grants.devices:
            if path not in BWRAP_DEVICES:
                words += ["--dev-bind-try", path, path]
        words += _command_link(argv, grants)
        if grants.cwd:
            words += ["--chdir", grants.cwd]
        elif CWD in grants.read_write:
            words += ["--chdir", CWD]
        return [*words, "--", *argv]


def _visible(path: str, grants: Grants) -> bool:
    return any(path == g or path.startswith(g.rstrip("/") + "/")
               for g in (*grants.read_only, *grants.read_write) if g != CWD)


def _command_link(argv: Sequence[str], grants: Grants) -> list[str]:
    """The command named by a path through a symlink outside the mounts (an agent CLI's
    ``node_modules/.bin/claude`` in a symlinked ``node_modules``): the link itself,
    pointing at its real path (whose install dir is granted), so the path the kernel
    names exists inside. Landlock needs none of this: it checks only the file opened."""
    command = argv[0] if argv else ""
    if not os.path.isabs(command) or _visible(command, grants):
        return []
    real = os.path.realpath(command)
    return [] if real == os.path.normpath(command) else ["--symlink", real, command]
