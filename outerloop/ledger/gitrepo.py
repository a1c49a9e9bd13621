"""The ledger's git repository: created by ``init``, committed (and pushed) by the tick."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.clock import now, stamp_seconds
from outerloop.errors import OuterloopError
from outerloop.ledger.store import LEDGER_DIR

GIT_TIMEOUT_S = 60
INDEX_LOCK = "index.lock"


def _git(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *args],
        cwd=ledger, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False,
    )


def init_repo(home: Path) -> Path:
    """Create ``<home>/ledger`` as a git repository (idempotent)."""
    ledger = home / LEDGER_DIR
    ledger.mkdir(parents=True, exist_ok=True)
    if not (ledger / ".git").exists():
        for args in (
            ("init", "-q", "-b", "main"),
            ("config", "user.name", "outerloop"),
            ("config", "user.email", "outerloop@localhost"),
        ):
            done = _git(ledger, *args)
            if done.returncode != 0:
                raise OuterloopError(f"git {args[0]} in {ledger} failed: {done.stderr.strip()}")
    return ledger


BACKLOG_FILE = "outerloop-backlog"
"""``ledger/.git/outerloop-backlog``: the ledger may hold uncommitted events (a tick
appended or folded some and has not committed them yet). The next tick commits even
when it has nothing new of its own, so a failed or killed commit heals."""


UNPUSHED_FILE = "outerloop-unpushed"
"""``ledger/.git/outerloop-unpushed``: the ledger has commits the remote may not have
(set before each commit, cleared by a push that succeeded). While it exists every
tick pushes, quiet ones too, so a refused push is retried until it goes through; a
quiet tick without it makes no network call (one ``stat``)."""


@dataclass
class Committed:
    sha: str | None
    """The new commit, or None (nothing to commit, or it failed: see ``notes``)."""
    notes: list[str] = field(default_factory=list)


def mark_backlog(home: Path) -> None:
    """Record that the ledger holds events a commit must still pick up."""
    git_dir = home / LEDGER_DIR / ".git"
    if git_dir.is_dir():
        (git_dir / BACKLOG_FILE).touch()


def has_backlog(home: Path) -> bool:
    return (home / LEDGER_DIR / ".git" / BACKLOG_FILE).exists()


def commit(home: Path, events: int, *, stale_lock_s: float,
           keep_out: list[str] | None = None) -> Committed:
    """Commit everything under ``ledger/``. Run jobs only append; the tick commits what
    they wrote. Never raises for git's refusal: the problem, with git's own words, is
    returned as a note and the backlog stays marked, so the next tick commits it.

    A ``.git/index.lock`` left by a git killed mid-commit (a tick killed with it) blocks
    every later commit; it is removed when no process has it open and it is older than
    ``stale_lock_s`` (the tick timeout: no live tick's git runs that long).

    ``keep_out``: target directories (``owner__name``) whose damaged files could not be
    restored (``ledger/integrity.py``): never committed, so git keeps the good bytes."""
    ledger = home / LEDGER_DIR
    mark_backlog(home)
    notes: list[str] = []
    spec = ["--", ".", *(f":(exclude){name}" for name in keep_out or [])]
    added = _git(ledger, "add", "-A", *spec)
    if added.returncode != 0 and _break_stale_lock(ledger, stale_lock_s, added.stderr, notes):
        added = _git(ledger, "add", "-A", *spec)
    if added.returncode != 0:
        notes.append(f"ledger not committed (retried next tick): git add failed: "
                     f"{_said(added)}")
        return Committed(None, notes)
    if _git(ledger, "diff", "--cached", "--quiet").returncode == 0:
        _clear_backlog(ledger)
        return Committed(None, notes)
    stamp = stamp_seconds(now())
    (ledger / ".git" / UNPUSHED_FILE).touch()
    done = _git(ledger, "commit", "-q", "-m", f"tick {stamp}: {events} events")
    if done.returncode != 0:
        notes.append(f"ledger not committed (retried next tick): git commit failed: "
                     f"{_said(done)}")
        return Committed(None, notes)
    _clear_backlog(ledger)
    return Committed(_git(ledger, "rev-parse", "HEAD").stdout.strip(), notes)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stderr or done.stdout).split())[:600] or f"exit {done.returncode}"


def _clear_backlog(ledger: Path) -> None:
    (ledger / ".git" / BACKLOG_FILE).unlink(missing_ok=True)


def _break_stale_lock(ledger: Path, stale_lock_s: float, stderr: str,
                      notes: list[str]) -> bool:
    """Remove ``.git/index.lock`` if it is stale; say what was done either way."""
    lock = ledger / ".git" / INDEX_LOCK
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    said = " ".join(stderr.split())[:600]
    if age < stale_lock_s:
        notes.append(f"ledger/.git/{INDEX_LOCK} is {age:.0f} s old (kept: younger than the "
                     f"tick timeout, {stale_lock_s:.0f} s); git said: {said}")
        return False
    holder = _process_using(lock, ledger)
    if holder is not None:
        notes.append(f"ledger/.git/{INDEX_LOCK} is {age:.0f} s old but pid {holder} still "
                     f"uses it (kept); git said: {said}")
        return False
    lock.unlink(missing_ok=True)
    notes.append(f"broke a stale ledger/.git/{INDEX_LOCK} ({age:.0f} s old, no process "
                 f"holds it; a git killed mid-commit leaves one); git said: {said}")
    return True


def _process_using(lock: Path, ledger: Path) -> int | None:
    """A process that has ``lock`` open or is a git working in ``ledger`` (from
    ``/proc``; None where there is none, or no ``/proc`` to ask)."""
    wanted, here = str(lock), str(ledger.resolve())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if (proc / "comm").read_text().strip() == "git" and \
                    os.readlink(proc / "cwd") in (here, str(ledger)):
                return int(proc.name)
            for fd in os.scandir(proc / "fd"):
                if os.readlink(fd.path) == wanted:
                    return int(proc.name)
        except OSError:
            continue
    return None


def unpushed(home: Path) -> bool:
    """Whether the ledger may hold commits the remote lacks (``UNPUSHED_FILE``)."""
    return (home / LEDGER_DIR / ".git" / UNPUSHED_FILE).exists()


def push(home: Path, remote: str) -> str | None:
    """Push the ledger to ``remote`` fast-forward only; returns a problem or None.

    A rejected push is logged and retried by every later tick (``unpushed``) until one
    goes through; it is never forced."""
    ledger = home / LEDGER_DIR
    done = _git(ledger, "push", "-q", remote, "HEAD:refs/heads/main")
    if done.returncode != 0:
        return (f"ledger push to {remote} refused (retried next tick): "
                f"{done.stderr.strip()[:300]}")
    (ledger / ".git" / UNPUSHED_FILE).unlink(missing_ok=True)
    return None
