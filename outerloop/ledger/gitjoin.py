"""Join the ledger remote's history when it holds earlier states of our files.

After a crash took the ledger's newest commits (``gitrepair`` resets the branch to an
older whole commit), the commits the remote already received are no ancestors of the
next one, and every push is refused as not fast-forward. The ledger files are the
truth and append-only: when each file of the remote's head is a byte prefix of the
same file in ours (no file only there), the remote holds nothing we lack, and a merge
commit with our tree and both heads as parents makes the next push a fast-forward.
Nothing is forced, and the remote's commits stay in the history. Anything else (a file
only there, a line we do not have: another home pushed there, or this home was
restored from an older backup) is not joined: the refusal stands and doctor names it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 60
BRANCH = "main"


def _git(ledger: Path, argv: list[str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*argv, *args], cwd=ledger, capture_output=True, check=False,
                          timeout=GIT_TIMEOUT_S)


def _blob(ledger: Path, argv: list[str], rev: str, name: str) -> bytes | None:
    done = _git(ledger, argv, "cat-file", "blob", f"{rev}:{name}")
    return done.stdout if done.returncode == 0 else None


def _earlier_state(ledger: Path, argv: list[str], theirs: str) -> bool:
    """Whether every file of ``theirs`` is a byte prefix of the same file in HEAD."""
    changed = _git(ledger, argv, "diff", "--no-renames", "--name-status", "-z",
                   theirs, "HEAD")
    if changed.returncode != 0:
        return False
    fields = changed.stdout.split(b"\0")
    for status, name in zip(fields[::2], fields[1::2], strict=False):
        path = name.decode("utf-8", "surrogateescape")
        if status == b"A":
            continue
        if status != b"M":
            return False
        old, new = _blob(ledger, argv, theirs, path), _blob(ledger, argv, "HEAD", path)
        if old is None or new is None or not new.startswith(old):
            return False
    return True


def join_remote(ledger: Path, argv: list[str], remote: str) -> str | None:
    """Fetch ``remote``'s branch and ``join`` it; None when nothing was joined."""
    if _git(ledger, argv, "fetch", "-q", remote, BRANCH).returncode != 0:
        return None
    theirs = _git(ledger, argv, "rev-parse", "--verify", "FETCH_HEAD^{commit}")
    if theirs.returncode != 0:
        return None
    return join(ledger, argv, theirs.stdout.decode().strip(), remote)


def join(ledger: Path, argv: list[str], theirs_sha: str, remote: str) -> str | None:
    """Make HEAD a descendant of ``theirs_sha`` (the remote's branch, fetched) when that
    is only an earlier state of our files; returns a note saying so, None when nothing
    was joined (already a descendant, or the remote holds something we lack)."""
    head = _git(ledger, argv, "rev-parse", "--verify", "HEAD^{commit}")
    if head.returncode != 0:
        return None
    head_sha = head.stdout.decode().strip()
    if _git(ledger, argv, "merge-base", "--is-ancestor", theirs_sha,
            head_sha).returncode == 0:
        return None  # already a fast-forward: the refusal is something else
    if not _earlier_state(ledger, argv, theirs_sha):
        return None
    made = _git(ledger, argv, "commit-tree", "HEAD^{tree}", "-p", head_sha, "-p", theirs_sha,
                "-m", f"outerloop: join {remote}'s history (earlier states of these files)")
    joined = made.stdout.decode().strip()
    if made.returncode != 0 or not joined or _git(
            ledger, argv, "update-ref", "-m", "outerloop: join the remote's history",
            f"refs/heads/{BRANCH}", joined, head_sha).returncode != 0:
        return None
    return (f"the ledger's history was joined with {remote}'s {BRANCH} ({theirs_sha[:12]}), "
            f"which holds earlier states of these files (after a repair)")
