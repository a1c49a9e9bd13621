"""Helpers for the leftover-process tests: sleepers that leave their process group and
session (``setsid -f``, a double fork), and a way to find them from outside.

A sleeper is ``sleep <marker>`` where the marker (``4321.<nonce>``) is unique to the
test: a bwrap child sees only its own PID namespace, so the tests find survivors by
their command line in the host's ``/proc`` rather than by the pid they wrote. Each
sleeper also appends its own pid to a file, so a test knows they all started.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from pathlib import Path

SETTLE_S = 1.0


def marker() -> str:
    """A ``sleep`` argument unique to one test (about 72 minutes: longer than any test)."""
    return f"4321.{secrets.randbelow(10**9):09d}"


def escapes(mark: str, pid_file: str) -> str:
    """Shell that starts two sleepers outside its process group and session, and
    returns once both run: ``setsid -f`` and a double fork with ``setsid``. They
    ignore TERM and HUP, as a hostile daemon would."""
    sleeper = f"trap \"\" TERM HUP; echo $$ >> {pid_file}; exec sleep {mark}"
    return (f"setsid -f bash -c '{sleeper}' </dev/null >/dev/null 2>&1; "
            f"(setsid bash -c '{sleeper}' </dev/null >/dev/null 2>&1 &); "
            f"for i in $(seq 100); do "
            f"[ \"$(wc -l < {pid_file} 2>/dev/null || echo 0)\" -ge 2 ] && break; "
            f"sleep 0.02; done")


def survivors(mark: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds ``mark``."""
    found = []
    needle = mark.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        if needle in cmdline and stat[stat.rfind(b")") + 2:][:1] != b"Z":
            found.append(int(name))
    return found


def survivors_after(mark: str, settle_s: float = SETTLE_S) -> list[int]:
    """``survivors`` once they had ``settle_s`` to die (none should need it)."""
    deadline = time.monotonic() + settle_s
    while (left := survivors(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_all(mark: str) -> None:
    """Clean up after a failing test (the old code leaves the sleepers running)."""
    for pid in survivors(mark):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
