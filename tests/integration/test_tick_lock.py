"""The tick lock's holder record and the breaking of a stale lock."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from outerloop.kernel.lock import LOCK_FILE, TickLock


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_lock_of_dead_pid_is_broken_with_warning_when_old(tmp_path: Path) -> None:
    path = tmp_path / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    holder = {"host": socket.gethostname(), "pid": _dead_pid(), "started": time.time() - 4000}
    os.write(fd, json.dumps(holder).encode())
    keeper = subprocess.Popen(["sleep", "30"], pass_fds=(fd,))
    os.close(fd)
    try:
        lock = TickLock(tmp_path, timeout_s=600)
        assert lock.acquire()
        assert lock.warning is not None and "stale" in lock.warning
        lock.release()
    finally:
        keeper.kill()
        keeper.wait()


def test_recent_lock_is_not_broken_when_holder_pid_is_dead(tmp_path: Path) -> None:
    path = tmp_path / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    holder = {"host": socket.gethostname(), "pid": _dead_pid(), "started": time.time()}
    os.write(fd, json.dumps(holder).encode())
    keeper = subprocess.Popen(["sleep", "30"], pass_fds=(fd,))
    os.close(fd)
    try:
        lock = TickLock(tmp_path, timeout_s=600)
        assert not lock.acquire()
        assert lock.holder is not None and lock.holder.pid == holder["pid"]
    finally:
        keeper.kill()
        keeper.wait()
