"""``git add -A`` of the agent's work tree, without git reading a byte of it.

The entries of the candidate are what ``git add -A`` would stage into the scratch index,
under the same ignore rules, built from the walk (``seal_walk``) and the blobs Python
wrote (``seal_objects``):

- every path the base or the previous seal tracks, as the work tree has it now (a
  regular file, ``100755`` when its owner may execute it; a symlink, ``120000``; gone
  when nothing, or a folder, is there);
- every file no ignore rule covers: listed by ``git ls-files --others
  --exclude-standard`` with the kernel's git dir and an empty index. That is the one git
  process that looks at the work tree, and it only lists names: it reads the
  ``.gitignore`` files as patterns, never a ``.gitattributes``, never a config or hook
  of the tree (the kernel's git dir holds the config), never enters a nested repository
  (it names the folder, ``sub/``, and the walk refused it before anyway), never opens a
  FIFO (``tests/security/test_seal_as_data.py`` holds it to that);
- a base gitlink (the target's own submodule) stays as the base has it while its folder
  exists; nothing inside that folder is staged (git does not look in either).

The index is then written from those entries (``update-index --index-info``, into a new
file renamed over the scratch index) and ``write-tree`` makes the tree: both read only
the kernel's git dir.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from outerloop.attempt import seal_cache
from outerloop.attempt import seal_objects as obj
from outerloop.attempt.seal_walk import Scan
from outerloop.errors import OuterloopError
from outerloop.forge import localgit as g
from outerloop.run.paths import RunPaths

Entry = tuple[str, str]
"""``(mode, object name)`` of one index entry."""
LIST_INDEX = "seal.list.index"
"""Never written: ``ls-files --others`` over an empty index lists every file not ignored."""
MAX_NOTED_PATHS = 20
MAX_SHOWN_CHARS = 200


class SealRefused(OuterloopError):
    """The working tree cannot be sealed as it is; the message is for the agent (what,
    which paths, what to do)."""


def shown(paths: list[str]) -> str:
    """The first ``MAX_NOTED_PATHS`` of ``paths`` as text an agent can read: a name that
    is not printable (a newline, bytes that are not UTF-8) is shown escaped, a very
    long one cut."""
    def one(path: str) -> str:
        text = path if path.isprintable() else ascii(path)
        return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "..."
    more = len(paths) - MAX_NOTED_PATHS
    return ", ".join(one(p) for p in paths[:MAX_NOTED_PATHS]) + (
        f" and {more} more" if more > 0 else "")


def refusal(problems: list[str]) -> str:
    return f"Refused: {'; '.join(problems)}; nothing was launched, sealed or charged."


def changed_problem(paths: list[str]) -> str:
    return (f"the working tree changed while it was being sealed ({shown(sorted(paths))}). "
            f"Stop whatever still writes to the workspace and stage again")


def tree_entries(git_dir: Path, rev: str) -> dict[str, Entry]:
    """``path -> (mode, name)`` of every entry of ``rev``'s tree (gitlinks included)."""
    out = g.git(["ls-tree", "-r", "-z", "--full-tree", rev], git_dir=git_dir)
    return _entries(out, mode_at=0, name_at=2)


def index_entries(git_dir: Path, index: Path) -> dict[str, Entry]:
    """The entries of the scratch index the previous seal wrote ({} when there is none,
    or it cannot be read: the base alone is then what is tracked)."""
    if not index.exists():
        return {}
    try:
        out = g.git(["ls-files", "-s", "-z"], git_dir=git_dir,
                    env={"GIT_INDEX_FILE": str(index)})
    except g.GitFailed:
        return {}
    return _entries(out, mode_at=0, name_at=1)


def _entries(listing: bytes, mode_at: int, name_at: int) -> dict[str, Entry]:
    out = {}
    for line in listing.split(b"\0"):
        meta, tab, path = line.partition(b"\t")
        if tab:
            fields = meta.decode().split()
            out[os.fsdecode(path)] = (fields[mode_at], fields[name_at])
    return out


def _list_env(paths: RunPaths) -> dict[str, str]:
    empty = paths.root / LIST_INDEX
    empty.unlink(missing_ok=True)
    return {"GIT_INDEX_FILE": str(empty)}


def untracked(paths: RunPaths, exclude: Path) -> list[str]:
    """Every file of the work tree no ignore rule covers (names only, nothing read)."""
    out = g.git(["-c", f"core.excludesFile={exclude}", "--work-tree", str(paths.ws),
                 "ls-files", "-z", "--others", "--exclude-standard"],
                git_dir=paths.kernel_git, env=_list_env(paths), cwd=paths.ws)
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def not_ignored(paths: RunPaths, exclude: Path, candidates: list[str]) -> list[str]:
    """Those of ``candidates`` no ignore rule covers (``check-ignore``: patterns only)."""
    if not candidates:
        return []
    stdin = b"".join(os.fsencode(p) + b"\0" for p in candidates)
    try:
        out = g.git(["-c", f"core.excludesFile={exclude}", "--work-tree", str(paths.ws),
                     "check-ignore", "-z", "--stdin", "--no-index"],
                    git_dir=paths.kernel_git, env=_list_env(paths), cwd=paths.ws, stdin=stdin)
    except g.GitFailed as exc:
        if exc.returncode != 1:  # 1: none of them is ignored
            raise
        out = b""
    ignored = {os.fsdecode(p) for p in out.split(b"\0") if p}
    return [p for p in candidates if p not in ignored]


def stage_all(paths: RunPaths, scan: Scan, base: dict[str, Entry], exclude: Path,
              algo: str, left_alone: Callable[[str], bool]) -> dict[str, Entry]:
    """The entries ``git add -A`` would give the scratch index (see the module).

    ``left_alone`` names paths a seal never takes (the built-in ignore set), whose FIFOs
    are no concern. Raises ``SealRefused`` for a FIFO, socket or device a seal would
    take, and for a tree that changed between the walk and the reads."""
    previous = index_entries(paths.kernel_git, paths.root / "seal.index")
    listed = untracked(paths, exclude)
    odd = [p for p in listed if p.endswith("/") or p not in scan.found]
    if odd:  # a nested repository (``sub/``) or a file made since the walk
        raise SealRefused(refusal([changed_problem(odd)]))
    tracked = set(base) | {p for p, e in previous.items() if e[0] != obj.GITLINK}
    specials = [p for p in scan.special if p in tracked]
    loose = [p for p in scan.special if p not in tracked and not left_alone(p)]
    specials += not_ignored(paths, exclude, loose)
    if specials:
        raise SealRefused(refusal([
            f"these are FIFOs, sockets or devices, which a candidate cannot hold: "
            f"{shown(sorted(specials))}. Delete them or move them out of the workspace"]))
    entries: dict[str, Entry] = {}
    kept_links: list[str] = []
    wanted: list[tuple[str, str]] = []
    for path in sorted(tracked | set(listed)):
        found = scan.found.get(path)
        if found is None:
            continue
        old = base.get(path)
        if old is not None and old[0] == obj.GITLINK:
            if found.kind == "dir":
                entries[path] = old
                kept_links.append(path)
            continue
        if found.kind in ("file", "link"):
            wanted.append((path, obj.LINK if found.kind == "link" else obj.FILE))
    inside = tuple(f"{p}/" for p in kept_links)
    wanted = [(p, m) for p, m in wanted if not p.startswith(inside)] if inside else wanted
    _hash_and_write(paths, scan, wanted, entries, algo)
    return entries


def _hash_and_write(paths: RunPaths, scan: Scan, wanted: list[tuple[str, str]],
                    entries: dict[str, Entry], algo: str) -> None:
    """Name each wanted file's blob (from the stat cache when its stamps are unchanged,
    else read), then write the blobs the kernel's repository lacks."""
    record = seal_cache.load(paths.root)
    hits: dict[str, Entry] = {}
    reads = []
    for path, mode in wanted:
        found = scan.found[path]
        cached = record.get(path)
        if cached is not None and cached[0] == found.stamp and cached[1] == (
                mode if mode == obj.LINK else obj.EXECUTABLE if found.executable else obj.FILE):
            hits[path] = (cached[1], cached[2])
        else:
            reads.append((path, mode))
    named, changed = obj.blob_ids(paths.ws, reads, algo)
    if changed:
        raise SealRefused(refusal([changed_problem(changed)]))
    named.update(hits)
    entries.update(named)
    lacking = obj.missing(paths.kernel_git, (e[1] for e in named.values()))
    writes = {}
    for path, entry in named.items():
        if entry[1] in lacking:
            writes[path] = entry
            lacking.discard(entry[1])
    changed = obj.write_blobs(paths.kernel_git, paths.ws, writes, algo)
    if changed:
        raise SealRefused(refusal([changed_problem(changed)]))
    seal_cache.save(paths.root, {p: (scan.found[p].stamp, *e) for p, e in named.items()})


def write_tree(paths: RunPaths, entries: dict[str, Entry], index: Path) -> str:
    """The tree of ``entries``; ``index`` (the scratch index) then holds them.

    Written into a new index file, renamed over ``index`` once git made the tree, so a
    seal killed midway leaves the previous index whole. Git refusing a path (a name it
    cannot hold) is a ``SealRefused`` naming git's words."""
    new = index.with_name(index.name + ".new")
    new.unlink(missing_ok=True)
    Path(f"{new}.lock").unlink(missing_ok=True)  # a killed seal's; only the run's job seals
    env = {"GIT_INDEX_FILE": str(new)}
    stdin = b"".join(f"{mode} {name}\t".encode() + os.fsencode(path) + b"\0"
                     for path, (mode, name) in sorted(entries.items()))
    try:
        g.git(["update-index", "-z", "--index-info"], git_dir=paths.kernel_git, env=env,
              stdin=stdin)
        tree = g.git_text(["write-tree"], git_dir=paths.kernel_git, env=env)
    except g.GitFailed as exc:
        new.unlink(missing_ok=True)
        raise SealRefused(refusal([
            f"git cannot hold a name in the working tree ({exc.stderr[:300]}). Rename or "
            f"delete that path and stage again"])) from None
    if new.exists():
        os.replace(new, index)
    else:
        index.unlink(missing_ok=True)  # nothing to stage: git wrote no index
    return tree
