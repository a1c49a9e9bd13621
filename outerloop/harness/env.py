"""The session environment and the process runner every backend uses.

A session runs code an agent wrote, so it gets an *allowlist* of the parent's
environment, never a copy minus a denylist: a new secret added to the operator's shell
tomorrow must not leak into sessions by default. The forge token never enters a
session (section 17); a model key enters only the session that needs it, passed
explicitly by its backend.

``run_process_group`` starts the session in its own process session and group and, when
the session ends or passes its time limit, signals the whole group, so a background
``sleep 300 &`` (or a stray training loop) started by the agent dies with the leg.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, NamedTuple

from outerloop.config import environ
from outerloop.sandbox import reaper

PASSED_VARS = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR")
DEFAULTS = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
FORGE_TOKEN_VARS = frozenset({"GITHUB_TOKEN", "GH_TOKEN", "OUTERLOOP_FORGE_TOKEN"})
CREDENTIAL_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")

GRACE_S = 5.0
POLL_MIN_S = 0.01
POLL_MAX_S = 0.1
MAX_OUTPUT_BYTES = 64 * 1024 * 1024


def _is_credential(name: str) -> bool:
    upper = name.upper()
    return upper.endswith(CREDENTIAL_SUFFIXES) or "API_KEY" in upper


def session_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a session: an allowlist, never the parent's environment.

    Passes ``PATH``, ``LANG``, ``LC_ALL``, ``TERM`` and ``TMPDIR`` from the parent when
    set (``PATH`` and ``LANG`` fall back to ``/usr/local/bin:/usr/bin:/bin`` and
    ``C.UTF-8``), sets ``HOME`` to the run's home, then adds ``extra``: the backend's
    own variables and at most one model credential.

    Raises ``ValueError`` (a programming error in the backend, not a user error) when
    ``extra`` sets ``HOME``, carries a forge token, or carries more than one
    credential-looking variable (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``).
    """
    parent = environ()
    env = {name: parent[name] for name in PASSED_VARS if parent.get(name)}
    for name, default in DEFAULTS.items():
        env.setdefault(name, default)
    env["HOME"] = str(home.absolute())
    extra = dict(extra or {})
    if "HOME" in extra:
        raise ValueError("session_env: HOME is always the run's home; do not pass it in extra")
    forge = sorted(FORGE_TOKEN_VARS & extra.keys())
    if forge:
        raise ValueError(f"session_env: the forge token never enters a session ({forge})")
    credentials = sorted(name for name in extra if _is_credential(name))
    if len(credentials) > 1:
        raise ValueError(
            f"session_env: at most one model credential enters a session, got {credentials}"
        )
    env.update(extra)
    return env


class ProcessOutcome(NamedTuple):
    """What a process group run produced. ``returncode`` is None when it timed out
    (the group was killed); a negative code means the leader died of that signal."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool


def run_process_group(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    stdin_text: str | None,
    timeout_s: float,
) -> ProcessOutcome:
    """Run ``argv`` in its own session and process group; wait at most ``timeout_s``.

    When the leader exits, whatever it left running in its group is killed: a leg
    leaves no process behind (experiments go through ``launch``, never ``&``). On
    timeout the group gets SIGTERM, ``GRACE_S`` to exit, then SIGKILL. Output goes to
    temporary files rather than pipes, so a background child holding stdout open can
    never make us wait past the leader's exit; each stream keeps its last
    ``MAX_OUTPUT_BYTES``. On timeout, descendants that left the group with their own
    ``setsid`` (Codex runs each command in a new session) are found through their
    parent links while the leader lives and signalled too; one that already outlived
    its parent before the timeout is beyond reach here: the sandbox's reaper (whose
subtree keeps them) or the leg's ``reaper.tree_ends`` ends those. The tree is killed
before the group, so the reaper still reaps it, and the call returns once it is dead.

    Raises ``OSError`` when ``argv[0]`` cannot be started; callers that must not raise
    (every ``Harness.run``) catch it.
    """
    with (
        tempfile.TemporaryFile() as stdin_file,
        tempfile.TemporaryFile() as out_file,
        tempfile.TemporaryFile() as err_file,
    ):
        if stdin_text is not None:
            stdin_file.write(stdin_text.encode("utf-8"))
            stdin_file.seek(0)
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=stdin_file if stdin_text is not None else subprocess.DEVNULL,
            stdout=out_file,
            stderr=err_file,
            start_new_session=True,
            close_fds=True,
        )
        exited = _wait_exit(proc.pid, time.monotonic() + max(0.0, timeout_s))
        timed_out = not exited
        tree: set[int] = set()
        if timed_out:
            tree = descendants(proc.pid)
            _signal_group(proc.pid, signal.SIGTERM)
            _signal_each(tree, signal.SIGTERM)
            _wait_exit(proc.pid, time.monotonic() + GRACE_S)
            tree |= descendants(proc.pid)
        _signal_each(tree, signal.SIGKILL)  # first: the sandbox's reaper still reaps them
        _signal_group(proc.pid, signal.SIGKILL)
        returncode = proc.wait()
        _wait_gone(tree, time.monotonic() + GRACE_S)
        return ProcessOutcome(
            returncode=None if timed_out else returncode,
            stdout=_read_tail(out_file),
            stderr=_read_tail(err_file),
            timed_out=timed_out,
        )


def _wait_exit(pid: int, deadline: float) -> bool:
    """Wait until ``pid`` exits or ``deadline`` passes, *without reaping it*: a zombie
    leader keeps its process group id reserved, so signalling the group afterwards
    cannot hit an unrelated process that reused the id."""
    delay = POLL_MIN_S
    while True:
        try:
            status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if status is not None:
            return True
        now = time.monotonic()
        if now >= deadline:
            return False
        time.sleep(min(delay, deadline - now))
        delay = min(delay * 2, POLL_MAX_S)


def _wait_gone(pids: set[int], deadline: float) -> None:
    """Wait until every process of ``pids`` has exited (gone or a zombie): SIGKILL is
    delivered at once but a process takes a moment to die, and the caller's next
    step (reading the workspace) must not race it."""
    while pids and time.monotonic() < deadline:
        pids = {pid for pid in pids if _alive(pid)}
        if pids:
            time.sleep(POLL_MIN_S)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` by parent links (read from ``/proc``)."""
    return reaper.live_descendants(pid)


def _signal_each(pids: set[int], sig: int) -> None:
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _signal_group(pgid: int, sig: int) -> None:
    """Signal a process group; a group already gone is what we wanted anyway."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _read_tail(handle: IO[bytes]) -> str:
    size = handle.seek(0, os.SEEK_END)
    start = max(0, size - MAX_OUTPUT_BYTES)
    handle.seek(start)
    data = handle.read()
    text = data.decode("utf-8", errors="replace")
    if start:
        return f"[... {start} bytes cut by outerloop ...]\n" + text
    return text
