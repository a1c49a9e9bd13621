"""Repair the ledger's git repository after a machine crash; the ledger files are the truth.

Git writes its index, refs and objects through the page cache; on a git without
``core.fsync`` (or before the tick set it) a power loss can leave ``.git/index`` empty,
the branch ref empty, or the newest objects missing or zero-filled, and every later
``git add``/``commit`` fails. The ledger files are fsynced line by line, so nothing
they hold is lost: only git's copy of them is. ``repair`` is called when a commit
failed (never on a healthy tick: it costs a few git processes), looks for what is
broken with cheap checks (no ``git fsck``), and mends it, least drastic first:

1. an unreadable index is rebuilt from the branch's commit (``git read-tree``);
2. a branch ref that is empty, zero, or names a missing or corrupt commit (or one
   whose tree is unreadable) is pointed at the newest good commit its reflog names,
   and the index rebuilt from it: history is kept, the commits the crash took are not
   needed (their lines are in the files the next commit records);
3. when no good commit is left (or ``.git`` itself is unreadable) the repository is
   moved aside to ``<home>/ledger-damaged/<time>/git`` and made anew around the
   current files, with the old config (identity, remotes); with a ledger remote its
   branch is fetched first and the new commit made on top, so pushes stay
   fast-forward.

The working files are never touched. Each repair returns one note starting with
``REPAIRED`` (the tick prints it and puts it in the heartbeat); a repository that looks
whole returns none, and the commit's own failure stands as it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zlib
from pathlib import Path

from outerloop.atomic import fsync_dir, make_dirs
from outerloop.clock import now, stamp_seconds
from outerloop.ledger.integrity import DAMAGED_DIR

REPAIRED = "LEDGER GIT REPAIRED"
GIT_TIMEOUT_S = 60
MAX_CANDIDATES = 50
"""Reflog entries tried, newest first, for a commit that is whole."""
ZERO = "0" * 40


def _run(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Git in ``ledger`` with its own git dir named (a home inside another repository
    never touches that one); a git that cannot run or times out reads as exit -1."""
    try:
        return subprocess.run(
            ["git", f"--git-dir={ledger / '.git'}", f"--work-tree={ledger}",
             "-c", "core.hooksPath=/dev/null", *args],
            cwd=ledger, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(list(args), -1, "", str(exc))


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stderr or done.stdout).split())[:300] or f"exit {done.returncode}"


def _whole(ledger: Path, rev: str) -> bool:
    """``rev`` names a readable commit whose whole tree can be listed."""
    return (_run(ledger, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}").returncode == 0
            and _run(ledger, "ls-tree", "-r", "-z", rev).returncode == 0)


def _branch(ledger: Path) -> str | None:
    """The branch ``.git/HEAD`` names, read from the file: git's own ``symbolic-ref``
    refuses when that branch's ref is broken, the very case to repair."""
    try:
        text = (ledger / ".git" / "HEAD").read_text(errors="replace").strip()
    except OSError:
        return None
    name = text.removeprefix("ref: ").strip()
    return name if text.startswith("ref: refs/heads/") and ".." not in name else None


def _ever_committed(git_dir: Path, ref: str) -> bool:
    """The branch had a commit (a loose ref file, a reflog or a packed entry): an
    unborn branch of a new repository is not broken."""
    packed = git_dir / "packed-refs"
    return ((git_dir / ref).exists() or (git_dir / "logs" / ref).exists()
            or (packed.exists() and f" {ref}" in packed.read_text(errors="replace")))


def _candidates(git_dir: Path, ref: str) -> list[str]:
    """Commits the branch pointed at, newest first (its reflog, HEAD's, packed-refs)."""
    found: list[str] = []
    for log in (git_dir / "logs" / ref, git_dir / "logs" / "HEAD"):
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            parts = line.split(" ", 2)
            if len(parts) == 3:
                found.extend((parts[1], parts[0]))
    packed = git_dir / "packed-refs"
    if packed.exists():
        for line in packed.read_text(errors="replace").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                found.append(sha)
    seen: list[str] = []
    for sha in found:
        if len(sha) == 40 and sha != ZERO and sha not in seen:
            seen.append(sha)
    return seen[:MAX_CANDIDATES]


def loose_object_whole(path: Path) -> bool:
    """A loose object inflates completely and hashes to its own name (what
    ``git fsck`` checks of it, without reading the packs)."""
    name = path.parent.name + path.name
    try:
        raw = zlib.decompressobj().decompress(path.read_bytes())
    except (OSError, zlib.error):
        return False
    header, nul, body = raw.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if not nul or kind not in (b"blob", b"tree", b"commit", b"tag") or \
            not size.isdigit() or int(size) != len(body):
        return False
    digest = hashlib.sha1 if len(name) == 40 else hashlib.sha256
    return digest(raw).hexdigest() == name


def _quarantine(ledger: Path, keep: Path) -> int:
    """Move every corrupt loose object (empty, zero-filled, cut short) under ``keep``:
    git takes a present object as whole and would never write it again, so a file
    whose content it had would be committed referring to the broken copy."""
    moved = 0
    for path in sorted((ledger / ".git" / "objects").glob("??/*")):
        if len(path.parent.name) != 2 or not path.is_file() or loose_object_whole(path):
            continue
        target = keep / "objects" / path.parent.name / path.name
        make_dirs(target.parent)
        os.rename(path, target)
        moved += 1
    return moved


def _set_branch(ledger: Path, ref: str, sha: str) -> bool:
    """Point ``ref`` at ``sha``; a broken loose ref file is removed first (git refuses
    to update a ref it cannot read)."""
    (ledger / ".git" / ref).unlink(missing_ok=True)
    return _run(ledger, "update-ref", "-m", "outerloop: repaired after a crash",
                ref, sha).returncode == 0


def _reindex(ledger: Path, rev: str | None) -> bool:
    """A new index from ``rev`` (an empty one for an unborn branch)."""
    (ledger / ".git" / "index").unlink(missing_ok=True)
    return rev is None or _run(ledger, "read-tree", rev).returncode == 0


def repair(home: Path, ledger: Path, remote: str | None = None) -> list[str]:
    """Find what a crash broke in ``ledger/.git`` and mend it (see the module's doc);
    returns the note saying what was done (none: nothing found broken)."""
    git_dir = ledger / ".git"
    if not git_dir.is_dir():
        return []
    keep = home / DAMAGED_DIR / stamp_seconds(now()).replace(":", "")
    ref = _branch(ledger)
    if ref is None:
        return [_rebuild(ledger, keep, remote, "ledger/.git/HEAD names no branch")]
    head_ok = _whole(ledger, ref)
    index = _run(ledger, "ls-files", "-s", "-z")
    if head_ok and index.returncode == 0:
        return []
    moved = _quarantine(ledger, keep)
    also = (f"; {moved} corrupt loose objects were moved to {keep / 'objects'} (git writes "
            f"them anew from the files)" if moved else "")
    if moved:
        head_ok = _whole(ledger, ref)
    if head_ok:
        if _reindex(ledger, ref) and _run(ledger, "ls-files", "-s").returncode == 0:
            return [f"{REPAIRED}: ledger/.git/index was unreadable after a crash "
                    f"({_said(index)}); rebuilt from {ref}{also}; the ledger files are "
                    f"committed as they are"]
        return [_rebuild(ledger, keep, remote, f"ledger/.git/index unreadable "
                         f"({_said(index)}) and not rebuilt from {ref}")]
    if not _ever_committed(git_dir, ref):
        _reindex(ledger, None)
        return [f"{REPAIRED}: ledger/.git/index was unreadable before the first commit "
                f"({_said(index)}); made anew{also}"]
    broken = _said(_run(ledger, "rev-parse", "--verify", f"{ref}^{{commit}}"))
    good = next((sha for sha in _candidates(git_dir, ref) if _whole(ledger, sha)), None)
    if good is not None and _set_branch(ledger, ref, good) and _reindex(ledger, good):
        _run(ledger, "reflog", "expire", "--stale-fix", "--expire=never",
             "--expire-unreachable=never", "--all")  # forget entries naming lost commits
        return [f"{REPAIRED}: ledger/.git/{ref} or the commit it names was broken after "
                f"a crash ({broken}); reset to {good[:12]}, the newest whole commit its "
                f"reflog names{also}; the ledger files, which are the truth, are committed "
                f"on top of it"]
    return [_rebuild(ledger, keep, remote, f"ledger/.git/{ref} or the commit it names "
                     f"is broken ({broken}) and no whole commit is left in its reflog")]


def _rebuild(ledger: Path, keep: Path, remote: str | None, why: str) -> str:
    """Move ``.git`` aside (to ``keep/git``) and make a new repository around the
    current files."""
    git_dir = ledger / ".git"
    aside = keep / "git"
    make_dirs(keep)
    os.rename(git_dir, aside)
    fsync_dir(keep)
    fsync_dir(ledger)
    branch = "main"
    _run(ledger, "init", "-q", "-b", branch)
    if _run(ledger, "config", "-f", str(aside / "config"), "--list").returncode == 0:
        shutil.copyfile(aside / "config", git_dir / "config")
    else:
        _run(ledger, "config", "user.name", "outerloop")
        _run(ledger, "config", "user.email", "outerloop@localhost")
    base = "its history starts again here"
    if remote:
        fetched = _run(ledger, "fetch", "-q", remote, branch)
        if fetched.returncode == 0 and _whole(ledger, "FETCH_HEAD"):
            sha = _run(ledger, "rev-parse", "FETCH_HEAD").stdout.strip()
            if _set_branch(ledger, f"refs/heads/{branch}", sha) and _reindex(ledger, sha):
                base = f"its history continues from {remote}'s {branch} ({sha[:12]})"
        else:
            base += f" (the remote's {branch} could not be fetched: {_said(fetched)}; " \
                    f"pushes are refused until an operator reconciles them)"
    return (f"{REPAIRED}: {why}; the broken repository was moved to {aside} and a new one "
            f"made around the ledger files, which are the truth; {base}")
