"""Which user a confined child runs as when the kernel runs as root.

Dropping every capability does not make a root child harmless: it is still uid 0, so
it *owns* every root-owned file, and ``/etc/shadow``, Slurm's database password file
(``slurmdbd.conf``, 0600) and munge's key (0400) open for it whatever its
capabilities (owner checks need none). So when the kernel's effective uid is 0, every
confined child (session, launch, eval, scorer, judge) switches to ``[sandbox]
child_user`` before it runs anything (``landlock_exec.py``: in the wrapper's forked
child; ``bwrap.py``: ``setpriv`` as the sandbox's first command), and its own
read-write directories are handed to that user first (``handover.py``).

The default is ``nobody`` (65534), not a free uid picked at random: agent CLIs and
tools ask the passwd database who they are (node's ``os.userInfo()`` throws for a uid
without an entry, ``whoami`` and ssh fail), and ``nobody`` is on every Linux system.
Its one drawback, sharing a uid with other ``nobody`` processes on the host, is closed
by the sandbox itself (Landlock scopes signals, bwrap hides other processes). An
operator who wants a uid of its own names one (``useradd --system outerloop-child``).

A kernel that does not run as root changes nothing: its children keep its uid, which
owns the home but not the system's secrets.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from outerloop.sandbox.base import SandboxError

DEFAULT_USER = "nobody"
DEFAULT_ID = 65534
FIELD = "[sandbox] child_user"
FIX = ("fix: set [sandbox] child_user to an unprivileged user that owns nothing of the "
       "home (default: nobody), e.g. `useradd --system outerloop-child`")


def kernel_is_root() -> bool:
    return os.geteuid() == 0


def child_ids(setting: str | int | None, home: Path | None = None) -> tuple[int, int] | None:
    """``(uid, gid)`` every confined child runs as, or None when the kernel is not root
    (children keep its uid). ``setting`` is ``[sandbox] child_user`` (already shaped
    by the settings: a number or a name). Raises ``SandboxError`` naming the field and
    the fix for a name this machine does not know, for root, and for a user that owns
    the home (it could then chmod the ledger and the keys)."""
    if not kernel_is_root():
        return None
    ids = _lookup(setting)
    if 0 in ids:
        raise SandboxError(f"{FIELD} = {setting!r} is root (uid/gid 0): a root child owns "
                           f"/etc/shadow and every root-only secret; {FIX}")
    if home is not None:
        try:
            owner = os.stat(home).st_uid
        except OSError:
            owner = None
        if owner == ids[0]:
            raise SandboxError(f"{FIELD} = {setting!r} (uid {ids[0]}) owns the home {home}: "
                               f"its children could chmod and chown the ledger and keys; "
                               f"{FIX}")
    return ids


def _lookup(setting: str | int | None) -> tuple[int, int]:
    if setting is None:
        try:
            entry = pwd.getpwnam(DEFAULT_USER)
        except KeyError:
            return DEFAULT_ID, DEFAULT_ID
        return entry.pw_uid, entry.pw_gid
    if isinstance(setting, int) or str(setting).isdigit():
        uid = int(setting)
        try:
            return uid, pwd.getpwuid(uid).pw_gid
        except KeyError:
            return uid, uid  # a uid of its own, without a passwd entry: its gid alike
    try:
        entry = pwd.getpwnam(str(setting))
    except KeyError:
        raise SandboxError(f"{FIELD} = {setting!r}: no such user on this machine; {FIX}, "
                           f"or give a number") from None
    return entry.pw_uid, entry.pw_gid


def describe(ids: tuple[int, int] | None) -> str:
    """For ``doctor`` and ``status``: ``uid 65534 (nobody)`` or the kernel's own."""
    if ids is None:
        return f"the kernel's own (uid {os.geteuid()}; not root, so no switch)"
    try:
        name = f" ({pwd.getpwuid(ids[0]).pw_name})"
    except KeyError:
        name = ""
    return f"uid {ids[0]}{name}, gid {ids[1]}"
