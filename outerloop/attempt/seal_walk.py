"""The agent's work tree, walked as data before anything seals it.

A tool run over the work tree does what the tree configures: ``git add -A`` over a
folder holding a ``.git`` of the agent's own asked that repository for its status,
which read the agent's config and ran its filter as the kernel (issue 46). So before
any git process looks at ``ws/``, this walk lists it through directory descriptors
(``sandbox/beneath``: no symlink followed, no FIFO opened, nothing read but names and
``lstat``) and finds what no seal may touch:

- an entry git treats as a repository: ``.git`` below the top (file, folder or symlink),
  and the names git takes for it (``.GIT``, ``.git.``, ``.git ``, ``git~1``: git's own
  ``verify_path`` refuses them in an index, so they could never be sealed either);
- a path over ``MAX_PATH_BYTES`` or more than ``MAX_DEPTH`` folders deep (git's own
  ``lstat`` fails past ``PATH_MAX``; a walk that deep would hold a descriptor a level);
- a folder the kernel cannot list (the seal would miss what is in it).

FIFOs, sockets and devices are reported too (``special``): the caller refuses those a
seal would take (not ignored, or where the base tracks a file). The top-level ``.git``
is the agent's own clone: the kernel never enters it.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.attempt.seal_cache import Stamp, stamp_of
from outerloop.sandbox import beneath

MAX_PATH_BYTES = 1024
"""A path (relative to the workspace, UTF-8 bytes) longer than this is refused: code
never needs one, and git's ``lstat`` of ``ws/<path>`` fails past ``PATH_MAX`` (4096)."""
MAX_DEPTH = 64
"""Folders nested deeper than this are refused (the walk holds one descriptor a level)."""
NTFS_SHORT_GIT = re.compile(r"git~[0-9]+")


@dataclass(frozen=True)
class Found:
    """One entry of the work tree, from ``lstat`` (nothing read)."""

    kind: str
    """``file``, ``link``, ``dir`` or ``special`` (FIFO, socket, device)."""
    executable: bool = False
    """The owner's execute bit (git's ``100755``)."""
    size: int = 0
    stamp: Stamp = (0, 0, 0, 0)
    """Inode, size, mtime and ctime (``seal_cache``: unchanged files are not read)."""


@dataclass
class Scan:
    """What the walk saw: every entry by path, and what no seal may touch."""

    found: dict[str, Found] = field(default_factory=dict)
    git_dirs: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    too_long: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def git_reserved(name: str) -> bool:
    """True when git takes the path component ``name`` for ``.git`` (case folded, with
    trailing dots and spaces or an NTFS stream suffix dropped, or its 8.3 short name),
    in any ``\\``-separated piece (git's ``protectNTFS`` splits there too)."""
    if "git" not in name.lower():
        return False
    for piece in name.split("\\"):
        bare = piece.split(":", 1)[0].rstrip(" .").lower()
        if bare == ".git" or NTFS_SHORT_GIT.fullmatch(bare):
            return True
    return False


def scan(ws: Path) -> Scan:
    """Walk ``ws`` (never its top-level ``.git``), depth first, through descriptors.

    A directory is entered by ``O_NOFOLLOW`` relative to its parent's descriptor, so a
    folder swapped for a symlink mid-walk is reported (as unreadable), never entered.
    ``SymlinkRefused`` when ``ws`` itself is a symlink."""
    out = Scan()
    with beneath.directory(ws) as top:
        stack: list[tuple[int, str, list[os.DirEntry[str]]]] = []
        _enter(out, os.dup(top), "", stack)
        while stack:
            fd, prefix, pending = stack[-1]
            if not pending:
                os.close(fd)
                stack.pop()
                continue
            entry = pending.pop()
            path = f"{prefix}/{entry.name}" if prefix else entry.name
            if not prefix and entry.name == ".git":
                continue  # the agent's own clone: never read by the kernel
            _visit(out, fd, entry, path, len(stack), stack)
    return out


def _enter(out: Scan, fd: int, prefix: str,
           stack: list[tuple[int, str, list[os.DirEntry[str]]]]) -> None:
    """List the directory ``fd`` (``prefix`` in the tree) and push it on ``stack``."""
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name, reverse=True)
    except OSError:
        os.close(fd)
        out.unreadable.append(prefix)
        return
    stack.append((fd, prefix, entries))


def _visit(out: Scan, fd: int, entry: os.DirEntry[str], path: str, depth: int,
           stack: list[tuple[int, str, list[os.DirEntry[str]]]]) -> None:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return  # gone since the listing
    if git_reserved(entry.name):
        out.git_dirs.append(path)
        return
    if len(os.fsencode(path)) > MAX_PATH_BYTES or depth > MAX_DEPTH:
        out.too_long.append(path)
        return
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        out.found[path] = Found("dir")
        try:
            sub = os.open(entry.name, beneath.DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            out.unreadable.append(path)
            return
        _enter(out, sub, path, stack)
    elif stat.S_ISREG(mode):
        out.found[path] = Found("file", bool(mode & stat.S_IXUSR), info.st_size,
                                stamp_of(info))
    elif stat.S_ISLNK(mode):
        out.found[path] = Found("link", size=info.st_size, stamp=stamp_of(info))
    else:
        out.found[path] = Found("special")
        out.special.append(path)
