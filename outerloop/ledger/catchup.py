"""A ledger behind its remote takes the lines it lost back before the tick acts.

A home restored from a backup holds a ledger older than what its ledger remote
(``ledger_remote``) received since: the runs, claims and posts of the lost lines would
be decided again. So a tick with a remote first fetches it (one round trip) and:

- the remote holds nothing the ledger lacks (the usual case): nothing happens;
- the ledger is behind (its ``HEAD`` is an ancestor of the remote's): it is
  fast-forwarded. Ledger files only grow, so each file the remote moved must extend
  the ledger's committed bytes; the file on disk (which may hold lines written after
  the last commit) takes the remote's missing tail when it is a prefix of the remote's
  version, and stays when it already holds all of it. ``HEAD`` and the index move to
  the remote's commit; the working files are only ever appended to;
- they diverged, but the remote's files are each a byte prefix of ours (a crash took
  commits the remote had; ``gitjoin``): its history is joined, nothing is taken;
- they diverged otherwise (each holds commits the other lacks), or a file's bytes
  disagree with the remote's: the tick refuses (``LedgerBehind``, one line naming the fix) and
  performs nothing, since acting on a ledger that forgot effects repeats them.

A remote that cannot be reached is a note, not a refusal: the tick goes on with the
ledger it has (the forge's facts still keep it from repeating what the forge shows,
``kernel/executor.py``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from outerloop.errors import OuterloopError
from outerloop.ledger import gitjoin, pending
from outerloop.ledger.gitrepo import git_argv
from outerloop.ledger.gitrepo import run_git as _git
from outerloop.ledger.store import LEDGER_DIR

REMOTE_REF = "refs/heads/main"


class LedgerBehind(OuterloopError):
    """The ledger is behind its remote and cannot be fast-forwarded: the tick stops."""


def _blob(ledger: Path, commit: str, key: str) -> bytes | None:
    done = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "cat-file", "blob",
                           f"{commit}:{key}"], cwd=ledger,
                          capture_output=True, timeout=60, check=False)
    return done.stdout if done.returncode == 0 else None


def _is_ancestor(ledger: Path, older: str, newer: str) -> bool:
    return _git(ledger, "merge-base", "--is-ancestor", older, newer).returncode == 0


def catch_up(home: Path, remote: str) -> str | None:
    """Fast-forward the ledger to ``remote`` when it is behind; returns a note (what was
    taken back, or why the remote was not asked), None when there was nothing to do.
    ``LedgerBehind`` when it is behind and cannot be fast-forwarded."""
    ledger = home / LEDGER_DIR
    ours = _git(ledger, "rev-parse", "-q", "--verify", "HEAD^{commit}").stdout.strip()
    if not ours and (ledger / ".git" / "logs" / "HEAD").exists():
        return None  # a broken repository, not an empty one: the commit repairs it first
    fetched = _git(ledger, "fetch", "-q", "--no-tags", remote, REMOTE_REF)
    if fetched.returncode != 0:
        said = " ".join(fetched.stderr.split())[:300]
        if "couldn't find remote ref" in said:
            return None  # nothing pushed yet
        return f"ledger remote {remote} not fetched (the ledger may be behind it): {said}"
    theirs = _git(ledger, "rev-parse", "FETCH_HEAD").stdout.strip()
    if not theirs or theirs == ours or (ours and _is_ancestor(ledger, theirs, ours)):
        return None
    if ours and not _is_ancestor(ledger, ours, theirs):
        joined = gitjoin.join(ledger, git_argv(), theirs, remote)
        if joined is not None:  # the remote holds only earlier states of our files
            return joined
        raise LedgerBehind(
            f"the ledger and its remote {remote} diverged (each holds commits the other "
            f"lacks: HEAD {ours[:12]}, remote {theirs[:12]}), so this home may have "
            f"forgotten effects; nothing was done; fix: compare `git -C {ledger} log "
            f"HEAD...FETCH_HEAD`, keep the history that holds the newest run (e.g. `git -C "
            f"{ledger} reset --hard FETCH_HEAD`), then tick again")
    changed = _git(ledger, "diff", "--name-only", "-z", ours or _empty_tree(ledger),
                   theirs).stdout.split("\0")
    taken = 0
    kept: list[str] = []
    for key in [k for k in changed if k]:
        taken += _take(ledger, key, ours, theirs, remote, kept)
    moved = _git(ledger, "reset", "-q", theirs)
    if moved.returncode != 0:
        raise LedgerBehind(f"the ledger is behind its remote {remote} and could not be "
                           f"moved to {theirs[:12]}: {' '.join(moved.stderr.split())[:300]}; "
                           f"nothing was done; fix: `git -C {ledger} status`, then tick again")
    pending.note(ledger, kept)
    return (f"ledger was behind its remote {remote}: fast-forwarded to {theirs[:12]} "
            f"({taken} bytes taken back in {len([k for k in changed if k])} files)")


def _empty_tree(ledger: Path) -> str:
    return _git(ledger, "hash-object", "-t", "tree", "/dev/null").stdout.strip()


def _take(ledger: Path, key: str, ours: str, theirs: str, remote: str,
          kept: list[str]) -> int:
    """Bring one file to the remote's bytes by appending; how many bytes were taken."""
    want = _blob(ledger, theirs, key)
    if want is None:
        return 0  # gone from the remote: a ledger file only grows, keep it
    had = (_blob(ledger, ours, key) if ours else None) or b""
    path = ledger / key
    try:
        disk = path.read_bytes()
    except FileNotFoundError:
        disk = b""
    if not want.startswith(had):
        raise LedgerBehind(f"ledger/{key} on the remote {remote} does not continue the "
                           f"ledger's committed bytes (rewritten on one side); nothing was "
                           f"done; fix: `outerloop verify`, and compare with `git -C {ledger} "
                           f"diff HEAD FETCH_HEAD -- {key}`")
    if disk.startswith(want):
        if len(disk) > len(want):
            kept.append(key)  # lines written since: the next commit takes them
        return 0
    if not want.startswith(disk):
        raise LedgerBehind(f"ledger/{key} holds lines its remote {remote} does not (written "
                           f"after the backup was taken?), and the remote holds lines it "
                           f"lacks; nothing was done; fix: compare `git -C {ledger} diff "
                           f"FETCH_HEAD -- {key}`, keep the remote's (`git -C {ledger} "
                           f"checkout FETCH_HEAD -- {key}`), then tick again")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        handle.write(want[len(disk):])
        handle.flush()
        os.fsync(handle.fileno())
    return len(want) - len(disk)
