"""The ledger files the next commit must take: a journal written before they are forgotten.

A commit takes only the files that changed since the last one (``ledger/gittree.py``),
not ``git add -A`` over every file (100,000 run files at 100,000 runs). What changed is
known only for a while: a run job's lines are new to the fold that reads them, and once
that fold's cache is saved the next fold takes them as read. So each writer of a change
names its file here *before* the moment after which no one would know:

- the fold (``ledger/rebuild.py``), every file it read new lines of, before it saves its
  cache (a run's file a job wrote, the tick's own file, a file made by another command);
- the attestation (``ledger/attest.py``), each heads segment, before it appends;
- the tick, each tick segment its writers wrote (and, when the commit takes every
  file, each changed file the check against git found: ``integrity.unread_changes``),
  before it commits.

The journal is ``ledger/.git/outerloop-backlog``, one ledger key a line (``owner__name/
runs/<id>.jsonl``), appended and fsynced; its existence alone is the backlog a commit
heals (``gitrepo.has_backlog``). A commit that went through empties it, but for the keys
it had to keep out (a frozen target's). A tick killed anywhere before that leaves it, so
the next commit takes what the killed one would have, whatever that tick got to save.

``EVERYTHING`` (a line ``*``), or a journal with no line at all (one an older kernel
left: it only marked), means the next commit cannot know what changed: ``git add -A``.
So does a fold that read more than ``MAX_KEYS`` files (a cold fold).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from outerloop.atomic import fsync_dir
from outerloop.config import durable

JOURNAL_FILE = "outerloop-backlog"
EVERYTHING = "*"
MAX_KEYS = 2000
"""More changed files than this: the commit is ``git add -A`` (which has every file's
stat to go by), not one object written per file."""


def journal_path(ledger: Path) -> Path:
    return ledger / ".git" / JOURNAL_FILE


def note(ledger: Path, keys: Iterable[str]) -> None:
    """Name ``keys`` (ledger-relative paths) for the next commit, durably; a ledger with
    no git yet has no journal (its first commit takes everything)."""
    names = list(dict.fromkeys(keys))
    git_dir = ledger / ".git"
    if not names or not git_dir.is_dir():
        return
    if len(names) > MAX_KEYS:
        names = [EVERYTHING]
    path = journal_path(ledger)
    new = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, "".join(f"{name}\n" for name in names).encode(
            "utf-8", "surrogateescape"))
        if durable():
            os.fsync(fd)
    finally:
        os.close(fd)
    if new and durable():
        fsync_dir(git_dir)


def note_everything(ledger: Path) -> None:
    """The next commit takes every file (``git add -A``): what changed is not known."""
    note(ledger, [EVERYTHING])


def read(ledger: Path) -> set[str] | None:
    """The keys named since the last commit ({} when there is no journal); None when the
    next commit must take everything."""
    try:
        text = journal_path(ledger).read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return set()
    keys = {line for line in text.splitlines() if line.strip()}
    if not keys or EVERYTHING in keys:
        return None
    return keys


def exists(ledger: Path) -> bool:
    return journal_path(ledger).exists()


def clear(ledger: Path, keep: Iterable[str] = ()) -> None:
    """After a commit: forget what it took; ``keep`` (what it had to leave out) stays
    named for a later one."""
    path = journal_path(ledger)
    kept = sorted(set(keep))
    if not kept:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text("".join(f"{key}\n" for key in kept), encoding="utf-8",
                   errors="surrogateescape")
    os.replace(tmp, path)
