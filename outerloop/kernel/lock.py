"""The tick lock: ``flock`` on ``tick.lock``, with the holder recorded.

Held by a live tick -> the caller prints who holds it and exits 0. A lock held past
``3 x tick_timeout`` by a dead pid on this host (a child that inherited the lock,
a hung filesystem) is broken with a logged warning.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from outerloop.clock import stamp_seconds

LOCK_FILE = "tick.lock"


@dataclass
class Holder:
    host: str
    pid: int
    started: float

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} since {stamp_seconds(self.started)}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_holder(path: Path) -> Holder | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
        return Holder(str(data["host"]), int(data["pid"]), float(data["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class TickLock:
    """Context-free lock object: ``acquire()`` -> bool, ``release()``."""

    def __init__(self, home: Path, timeout_s: int) -> None:
        self.path = home / LOCK_FILE
        self.timeout_s = timeout_s
        self._fd: int | None = None
        self.holder: Holder | None = None
        self.warning: str | None = None

    def _try(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        me = {"host": os.uname().nodename, "pid": os.getpid(), "started": time.time()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError:
            os.close(fd)  # a full disk: give the lock back, say so (the CLI, one line)
            raise
        self._fd = fd
        return True

    def acquire(self) -> bool:
        if self._try():
            return True
        self.holder = read_holder(self.path)
        holder = self.holder
        stale = (
            holder is not None
            and holder.host == os.uname().nodename
            and not _pid_alive(holder.pid)
            and time.time() - holder.started > 3 * self.timeout_s
        )
        if stale and holder is not None:
            self.warning = f"broke a stale tick lock held by dead {holder.describe()}"
            self.path.unlink(missing_ok=True)
            return self._try()
        return False

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
