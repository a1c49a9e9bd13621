"""The ledger's git repository: created by ``init``, committed (and pushed) by the tick.

Every git the kernel runs here fsyncs what a commit writes (objects, refs, the index:
``durable_config``), so a machine crash leaves the last commit or the one before, never
a repository that refuses the next commit. A repository broken all the same (an older
git, a crash before this was set, a disk that lies) is repaired by the commit that
fails on it (``ledger/gitrepair.py``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from outerloop import child_wait
from outerloop.clock import now, stamp_seconds
from outerloop.config import durable
from outerloop.errors import OuterloopError
from outerloop.ledger import gitjoin, gitrepair, gittree, pending
from outerloop.ledger.store import LEDGER_DIR

GIT_TIMEOUT_S = 60
INDEX_LOCK = "index.lock"
CORE_FSYNC_SINCE = (2, 36)
"""The first git with ``core.fsync`` (objects, refs and index); older ones have only
``core.fsyncObjectFiles`` (objects)."""


@functools.cache
def git_version() -> tuple[int, int]:
    """``(major, minor)`` of the ``git`` on ``PATH``; (0, 0) when it cannot be told."""
    try:
        said = subprocess.run(["git", "--version"], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0, 0
    found = re.search(r"(\d+)\.(\d+)", said)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def durable_config() -> list[str]:
    """``-c`` options that make git fsync what a commit writes before it returns.

    Given on every command rather than kept in ``.git/config``, so every existing
    ledger gets them and a config lost in a crash cannot lose them. ``committed`` is
    objects and refs; ``index`` the index (an emptied one stops every ``git add``);
    ``fsyncMethod=fsync`` because ``batch`` is only as safe as ``fsync`` on some file
    systems. A git older than 2.36 fsyncs its objects only (refs and the index are
    left to ``gitrepair``); one whose version cannot be told gets both spellings
    (git ignores a ``core`` key it does not know)."""
    if not durable():
        return []
    version = git_version()
    modern = ["-c", "core.fsync=committed,index", "-c", "core.fsyncMethod=fsync"]
    legacy = ["-c", "core.fsyncObjectFiles=true"]
    if version >= CORE_FSYNC_SINCE:
        return modern
    return legacy if version > (0, 0) else legacy + modern


def _argv() -> list[str]:
    return ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false",
            *durable_config()]


def _git(ledger: Path, *args: str, input: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    return child_wait.run([*_argv(), *args], cwd=ledger, capture_output=True, text=True,
                          input=input, timeout=GIT_TIMEOUT_S)


def git_argv() -> list[str]:
    """The argv every kernel git in the ledger starts with (no hooks, no signing, durable)."""
    return _argv()


def run_git(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git`` in the ledger as the kernel runs it (no hooks, no signing, durable)."""
    return _git(ledger, *args)


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


BACKLOG_FILE = pending.JOURNAL_FILE
"""``ledger/.git/outerloop-backlog``: the ledger may hold uncommitted events (a tick
appended or folded some and has not committed them yet). The next tick commits even
when it has nothing new of its own, so a failed or killed commit heals. Its lines name
the files changed since the last commit (``ledger/pending.py``): the commit takes those
alone (``ledger/gittree.py``)."""


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
    repaired: list[str] = field(default_factory=list)
    """What ``gitrepair`` mended in a repository a crash broke (also in ``notes``)."""


def mark_backlog(home: Path) -> None:
    """Record that the ledger holds changes a commit must still pick up, not knowing
    which: the next commit takes every file (``git add -A``)."""
    pending.note_everything(home / LEDGER_DIR)


def has_backlog(home: Path) -> bool:
    return pending.exists(home / LEDGER_DIR)


def commit(home: Path, events: int, *, stale_lock_s: float,
           keep_out: list[str] | None = None, remote: str | None = None,
           check_everything: Callable[[], list[str]] | None = None) -> Committed:
    """Commit what changed under ``ledger/``. Run jobs only append; the tick commits what
    they wrote. The files named since the last commit (``ledger/pending.py``) are
    committed alone on ``HEAD`` (``ledger/gittree.py``); when what changed is not known,
    or that cannot be done here, everything is (``git add -A``). Never raises for git's
    refusal: the problem, with git's own words, is returned as a note and the backlog
    stays marked, so the next tick commits it.

    A ``.git/index.lock`` left by a git killed mid-commit (a tick killed with it) blocks
    every later commit; it is removed when no process has it open and it is older than
    ``stale_lock_s`` (the tick timeout: no live tick's git runs that long).

    ``keep_out``: target directories (``owner__name``) whose damaged files could not be
    restored (``ledger/integrity.py``): never committed, so git keeps the good bytes.
    ``check_everything``: the caller checked only the files named for this commit; run
    before a ``git add -A`` (which takes every file), it checks every committed file
    and returns more to keep out.

    A commit that fails on a repository a machine crash broke (an empty index, a
    broken branch ref, a missing newest object) has it repaired (``gitrepair``, given
    ``remote`` to build on should it be made anew) and is tried once more."""
    ledger = home / LEDGER_DIR
    notes: list[str] = []
    keys = pending.read(ledger)
    if keys is not None and not keys and not _has_head(ledger):
        keys = None  # no commit yet: what was written before git existed is named nowhere
    quick: str | None = None
    if keys is not None:
        done = _commit_named(ledger, events, keys, keep_out or [])
        if done is not None and done[1] is None:
            return Committed(done[0], notes)
        if done is not None:  # committed; the index refused: `git add -A` mends it
            quick = done[0]
    mark_backlog(home)
    if check_everything is not None:
        keep_out = [*(keep_out or []), *check_everything()]
    spec = ["--", ".", *(f":(exclude){name}" for name in keep_out or [])]
    added = _git(ledger, "add", "-A", *spec)
    if added.returncode != 0 and _break_stale_lock(ledger, stale_lock_s, added.stderr, notes):
        added = _git(ledger, "add", "-A", *spec)
    sha, failure = _commit_added(ledger, events, added)
    repaired: list[str] = []
    if failure is not None:
        repaired = gitrepair.repair(home, ledger, remote)
        if repaired:
            mark_backlog(home)  # a repository made anew has lost the mark
            notes.extend(repaired)
            sha, failure = _commit_added(ledger, events, _git(ledger, "add", "-A", *spec))
    if failure is not None:
        notes.append(failure)
    return Committed(sha or quick, notes, repaired)


def _has_head(ledger: Path) -> bool:
    return _git(ledger, "rev-parse", "-q", "--verify", "HEAD").returncode == 0


def _commit_named(ledger: Path, events: int, keys: set[str], keep_out: list[str]
                  ) -> tuple[str | None, str | None] | None:
    """Commit ``keys`` but those under ``keep_out`` (left named for a later commit):
    ``(new commit or None when nothing changed, why the index was not told or None)``;
    None when it cannot be done so (``gittree.Unable``): the caller runs ``git add -A``."""
    left = {key for key in keys
            if any(key == out or key.startswith(f"{out}/") for out in keep_out)}
    take = keys - left
    moment = now()
    message = f"tick {stamp_seconds(moment)}: {events} events"
    if not take:
        pending.clear(ledger, left)
        return None, None
    if (ledger / ".git" / INDEX_LOCK).exists():
        return None  # another git is at work here (or was killed): `git add -A` tells
    (ledger / ".git" / UNPUSHED_FILE).touch()
    index: gittree.IndexUpdate | None = None
    try:
        index = gittree.IndexUpdate(ledger, _argv(), take)
        sha = gittree.commit(ledger, take, message, int(moment.timestamp()), _argv(),
                             functools.partial(_git, ledger))
    except (gittree.Unable, OSError, ValueError):
        if index is not None:
            index.wait(GIT_TIMEOUT_S)
        return None
    problem = index.wait(GIT_TIMEOUT_S)
    pending.clear(ledger, left)
    if sha is not None and gittree.loose_objects_many(ledger / ".git"):
        _gc_auto(ledger)
    return sha, problem


def _gc_auto(ledger: Path) -> None:
    """``git gc --auto``, as ``git commit`` runs it after each commit (the commit built
    from ``HEAD`` is no ``git commit``): it packs the loose objects and goes on in the
    background (``gc.autoDetach``), so the tick does not wait for it."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run([*_argv(), "gc", "--auto", "--quiet"], cwd=ledger,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S, check=False)


def _commit_added(ledger: Path, events: int, added: subprocess.CompletedProcess[str]
                  ) -> tuple[str | None, str | None]:
    """After ``git add`` (its result ``added``): ``(new commit or None when there was
    nothing to commit, None)``, or ``(None, the failure as a note)``."""
    if added.returncode != 0:
        return None, f"ledger not committed (retried next tick): git add failed: {_said(added)}"
    if _git(ledger, "diff", "--cached", "--quiet").returncode == 0:
        _clear_backlog(ledger)
        return None, None
    stamp = stamp_seconds(now())
    (ledger / ".git" / UNPUSHED_FILE).touch()
    done = _git(ledger, "commit", "-q", "-m", f"tick {stamp}: {events} events")
    if done.returncode != 0:
        return None, (f"ledger not committed (retried next tick): git commit failed: "
                      f"{_said(done)}")
    _clear_backlog(ledger)
    return _git(ledger, "rev-parse", "HEAD").stdout.strip(), None


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stderr or done.stdout).split())[:600] or f"exit {done.returncode}"


def _clear_backlog(ledger: Path) -> None:
    pending.clear(ledger)


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


PUSH_REFUSED_FILE = "outerloop-push-refused"
"""In ``ledger/.git``: since when (the first refusal's stamp) and why the pushes to the
remote are refused, while they are (``push_refused``; ``doctor`` fails on it)."""


def push(home: Path, remote: str) -> str | None:
    """Push the ledger to ``remote`` fast-forward only; returns a problem or None.

    A rejected push is logged and retried by every later tick (``unpushed``) until one
    goes through; it is never forced. A remote that holds only earlier states of our
    files (its newest commits were lost here in a crash) is joined first
    (``gitjoin``), so a repair never ends the backups. While pushes are refused,
    ``PUSH_REFUSED_FILE`` says since when and why (doctor fails on it: a remote that
    never takes the ledger again is no backup)."""
    ledger = home / LEDGER_DIR
    refused = ledger / ".git" / PUSH_REFUSED_FILE
    done = _git(ledger, "push", "-q", remote, "HEAD:refs/heads/main")
    if done.returncode != 0 and gitjoin.join_remote(ledger, _argv(), remote) is not None:
        done = _git(ledger, "push", "-q", remote, "HEAD:refs/heads/main")
    if done.returncode != 0:
        why = done.stderr.strip()[:300]
        since = (push_refused(home) or (stamp_seconds(now().timestamp()), ""))[0]
        with contextlib.suppress(OSError):
            refused.write_text(f"{since}\n{why}\n", encoding="utf-8")
        return f"ledger push to {remote} refused (retried next tick): {why}"
    (ledger / ".git" / UNPUSHED_FILE).unlink(missing_ok=True)
    refused.unlink(missing_ok=True)
    return None


def push_refused(home: Path) -> tuple[str, str] | None:
    """(since, why) while the ledger's pushes to its remote are refused; None else."""
    try:
        since, _, why = (home / LEDGER_DIR / ".git" / PUSH_REFUSED_FILE).read_text(
            encoding="utf-8").partition("\n")
    except OSError:
        return None
    return since.strip(), why.strip()
