"""Files only this user may touch: the home (nobody else may write it: they could plant
ledger lines or keys) and the files holding secrets (keys, rclone.conf: 0600, ours)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from outerloop.atomic import fsync_dir, make_dirs
from outerloop.errors import ConfigError


def check_home_permissions(home: Path) -> None:
    """Refuse a home others may write to: they could plant ledger lines or keys."""
    mode = home.stat().st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(
            f"home {home} is group/world-writable (mode {stat.S_IMODE(mode):o}); "
            f"fix: chmod go-w {home}"
        )


def check_private(path: Path, what: str, holds: str) -> os.stat_result:
    """``path`` exists and neither group nor others may read it (the rule for every file
    holding a secret: keys, rclone.conf); ``what`` names it in the error, ``holds`` says
    what belongs there."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist; fix: write {holds} there "
                          f"and chmod 600 {path}") from None
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ConfigError(
            f"{what} {path} has mode {stat.S_IMODE(info.st_mode):o}; fix: chmod 600 {path}"
        )
    return info


def read_key(path: Path) -> str:
    """A secret from ``keys/``: must be a regular file, 0600, owned by us."""
    info = check_private(path, "key file", "the secret")
    if info.st_uid != os.getuid():
        raise ConfigError(f"key file {path} is not owned by you; fix: chown $USER {path}")
    return path.read_text(encoding="utf-8").strip()


def ensure_random_key(path: Path) -> str:
    """The secret in ``path``, made (32 random bytes as hex, 0600, its directory 0700)
    when there is none; two processes making it at once read the one that won. A key
    file others may read, or not ours, is refused (``ConfigError``) as ``read_key``
    refuses it."""
    if path.exists():
        return read_key(path)
    make_dirs(path.parent)
    os.chmod(path.parent, 0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # made by another process just now
        return read_key(path)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(os.urandom(32).hex() + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    fsync_dir(path.parent)
    return read_key(path)
