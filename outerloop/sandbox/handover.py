"""Hand a confined child's own directories to the user it runs as (kernel as root).

A child of a root kernel runs as ``[sandbox] child_user`` (``uid.py``), but the kernel
made its workspace, its checkout and its scratch HOME as root, so before the child
starts, each of its own read-write directories is chowned to that user, tree and all.
The operator's declared ``[sandbox] read_write`` paths are theirs to open to it and are
never touched.

The walk is the attacker's ground (the previous child wrote the tree), so:

- no symlink is followed: every directory is opened with ``O_NOFOLLOW`` relative to
  its parent's descriptor (``os.fwalk``), links themselves are left as they are;
- a regular file is chowned through a descriptor of the very inode checked
  (``O_PATH`` + ``fstat``, then ``/proc/self/fd/N``), never by name after a check;
- a regular file with more than one link is **never** chowned: a hard link in the
  tree may be ``/etc/shadow`` (left by an older root child); it stays root's;
- devices, FIFOs and sockets are never chowned (a device node given to the child
  would be raw hardware), nor anything on another filesystem (a mount inside);
- what already belongs to the user is skipped after one ``lstat`` (the common case
  from the second leg on).

This file imports only the standard library: a job's shell runs it as a script
(``python -I -S handover.py UID:GID PATH...``) before it starts the sandbox. On any
failure it exits 126 with a message, and the job's child does not start.
"""

from __future__ import annotations

import os
import stat
import sys

EXIT_REFUSED = 126


def hand_over(paths: list[str], uid: int, gid: int) -> int:
    """Chown every directory and single-link regular file under each of ``paths`` to
    ``uid:gid`` (a missing path is skipped); the number changed. Raises ``OSError``
    (a path that is a symlink: ``ELOOP``) or ``RecursionError`` (a tree ~1,000 deep)."""
    changed = 0
    for top in paths:
        try:
            top_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            device = os.fstat(top_fd).st_dev
            walk = os.fwalk(".", dir_fd=top_fd, follow_symlinks=False)
            for _, dirnames, filenames, dir_fd in walk:
                changed += _own_dir(dir_fd, uid, gid)
                dirnames[:] = [d for d in dirnames if _same_device(dir_fd, d, device)]
                for name in filenames:
                    changed += _own_file(dir_fd, name, uid, gid)
        finally:
            os.close(top_fd)
    return changed


def _same_device(dir_fd: int, name: str, device: int) -> bool:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_dev == device
    except OSError:
        return False


def _own_dir(dir_fd: int, uid: int, gid: int) -> int:
    info = os.fstat(dir_fd)
    if (info.st_uid, info.st_gid) == (uid, gid):
        return 0
    os.fchown(dir_fd, uid, gid)
    return 1


def _own_file(dir_fd: int, name: str, uid: int, gid: int) -> int:
    try:
        seen = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(seen.st_mode) or seen.st_nlink != 1 or \
            (seen.st_uid, seen.st_gid) == (uid, gid):
        return 0
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return 0
    try:
        info = os.fstat(fd)  # the inode chowned below, whatever the name means by then
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return 0
        os.chown(f"/proc/self/fd/{fd}", uid, gid)
        return 1
    finally:
        os.close(fd)


def parse_ids(text: str) -> tuple[int, int]:
    """``"UID:GID"`` -> ``(uid, gid)``; raises ``ValueError``."""
    uid, _, gid = text.partition(":")
    return int(uid), int(gid or uid)


def main(args: list[str]) -> int:
    try:
        uid, gid = parse_ids(args[0])
        hand_over(args[1:], uid, gid)
    except (IndexError, ValueError, OSError, RecursionError) as exc:
        print(f"outerloop sandbox: cannot hand the child's directories to its user: {exc}",
              file=sys.stderr)
        return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
