"""The ``bwrap`` backend: bubblewrap builds a mount namespace holding only the grants.

Nothing of the home is mounted except the child's own read-write directories, so the
ledger, keys and other runs are simply absent (ENOENT). ``--cap-drop ALL`` always:
as root bwrap otherwise keeps every capability, and the child could unmount its
tmpfs or remount ``/`` read-write. ``--unshare-pid`` hides the kernel's processes;
``--die-with-parent`` ends the sandbox with its starter. Needs unprivileged user
namespaces (or root). A bwrap cannot start inside Landlock or inside a root bwrap
with capabilities dropped, so agent CLIs run with their own sandboxes off inside ours.

As root with a child user (``uid.py``): bwrap keeps only ``KEPT_CAPS``, and the
sandbox's first command is ``setpriv`` switching to that user (no groups, no
inheritable or bounding capabilities) before it execs the child; the directories bwrap
creates above the grants (``/root`` for the kernel's interpreter, a 0700 home) are
made 0755 (bwrap makes them 0700 as root), so that user can reach its grants. bwrap
itself is not started as that user: it could then bind nothing that user cannot enter
(``/root/.pyenv``), and it would need unprivileged user namespaces.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from outerloop.sandbox.base import CWD, Grants, Kind, SandboxError

BINARY = "bwrap"
DEVICE_PREFIX = "/dev/"
SETPRIV = "setpriv"
KEPT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH")
"""What bwrap keeps as root when the child switches user: ``setpriv`` needs the first
three to switch and to empty the bounding set, and bwrap the last to enter the
workspace (``--chdir``), which already belongs to the child's user (0700); the switch
clears them all before the child's code runs (tested: CapEff 0)."""
OWN_MOUNTS = ("/", "/dev", "/proc", "/tmp", "/dev/shm")
"""Made by bwrap itself (``wrap``): never re-created as a skeleton directory."""
BWRAP_DEVICES = frozenset({"/dev/null", "/dev/shm", "/dev/full", "/dev/zero", "/dev/random",
                           "/dev/urandom"})
"""Provided by ``--dev /dev`` (and ``--tmpfs /dev/shm``) already."""


def find_bwrap() -> str | None:
    return shutil.which(BINARY) or (f"/usr/bin/{BINARY}" if os.path.isfile(
        f"/usr/bin/{BINARY}") else None)


def find_setpriv() -> str:
    """``setpriv`` (util-linux). Raises ``SandboxError``: without it a root kernel's
    bwrap children would stay root."""
    found = shutil.which(SETPRIV, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if found is None:
        raise SandboxError("bwrap children of a root kernel switch user with setpriv, "
                           "which is not installed; fix: install util-linux (setpriv), "
                           "or set [sandbox] kind = \"landlock\"")
    return found


@dataclass(frozen=True)
class BwrapSandbox:
    binary: str = "/usr/bin/bwrap"

    @property
    def kind(self) -> Kind:
        return "bwrap"

    def wrap(self, argv: Sequence[str], grants: Grants) -> list[str]:
        words = [self.binary, "--unshare-pid", "--unshare-ipc", "--die-with-parent",
                 "--cap-drop", "ALL"]
        switch: list[str] = []
        if grants.user is not None:
            uid, gid = grants.user
            for cap in KEPT_CAPS:
                words += ["--cap-add", cap]
            switch = [find_setpriv(), f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                      "--inh-caps=-all", "--bounding-set=-all", "--"]
        words += ["--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp"]
        link = _command_link(argv, grants)
        if grants.user is not None:
            for path in skeleton(grants, (*grants.traverse,
                                           *(os.path.dirname(c) for c in link[2:]))):
                words += ["--perms", "0755", "--dir", path]
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
        words += link
        if grants.cwd:
            words += ["--chdir", grants.cwd]
        elif CWD in grants.read_write:
            words += ["--chdir", CWD]
        return [*words, "--", *switch, *argv]


def skeleton(grants: Grants, through: Sequence[str] = ()) -> list[str]:
    """The directories above the grants (and ``through``, themselves included) that
    bwrap will create, outside every grant and its own mounts, parents first: as root
    it makes them 0700, which the child's user could not enter."""
    granted = [g for g in (*grants.read_only, *grants.read_write) if g != CWD]
    found: list[str] = []
    for path in [*granted, *(os.path.join(p, "x") for p in through)]:
        parent = os.path.dirname(path)
        while parent not in OWN_MOUNTS and parent not in found:
            if not _visible(parent, grants):
                found.append(parent)
            parent = os.path.dirname(parent)
    return sorted(found, key=lambda p: (p.count("/"), p))


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
