"""Commit the ledger files that changed, not the whole ledger: what a commit costs is the
new lines, however long the history.

``git add -A`` reads the index (an entry per file: 11 MB at 100,000 runs), stats every
file and writes the index back; at 100,000 runs that was 1.6 s a commit, most of a quiet
tick's budget many times over. The tick knows which files changed since the last commit
(``ledger/pending.py``), so the commit is built from ``HEAD`` and those files alone:

- ``HEAD``'s tree and the trees on the changed files' paths are read (one
  ``git cat-file --batch``);
- each changed file's blob, each tree on its path and the commit are written as git
  writes a loose object (zlib, ``<sha>`` under ``objects/``, fsynced with its directory);
- ``git update-ref HEAD <new> <old>`` moves the branch, refusing if another hand moved
  it since it was read (fsynced by ``durable_config``);
- the index is told of the same files meanwhile (``IndexUpdate``: ``git update-index``
  in a second process), so it stays the stat cache a ``git add -A`` (and the check
  before it, ``integrity.unread_changes``) and an operator's ``git status`` rely on;
  when it fails, the caller runs ``git add -A``, which mends it.

A tree unchanged (every file as committed) makes no commit. Anything this cannot do
(no commit yet, another object format, a file that is not a regular file, git
refusing) raises ``Unable``: the caller commits with ``git add -A`` instead, which also
repairs a repository a crash broke; so does an ``index.lock`` another git holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from outerloop import child_wait
from outerloop.atomic import fsync_dir
from outerloop.config import durable
from outerloop.ledger.gitrepair import loose_object_whole

IDENTITY = "outerloop <outerloop@localhost>"
"""The author and committer ``init_repo`` configures for the ledger."""
TREE_MODE = b"40000"
HEX_LEN = 40


class Unable(Exception):
    """This commit cannot be built from ``HEAD`` here: commit with ``git add -A``."""


@dataclass
class _Dir:
    files: dict[bytes, tuple[bytes, bytes] | None] = field(default_factory=dict)
    """name -> (mode, content) of a changed file, None for one gone."""
    dirs: dict[bytes, _Dir] = field(default_factory=dict)


class _Reader:
    """One ``git cat-file --batch``: objects by name, read on demand."""

    def __init__(self, ledger: Path, argv: list[str]) -> None:
        self.proc = child_wait.Popen([*argv, "cat-file", "--batch"], cwd=ledger,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)

    def get(self, name: str) -> tuple[str, bytes, bytes]:
        """``(sha, type, content)``; ``Unable`` when git has no such object."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(name.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3:
            raise Unable(f"git has no {name} ({b' '.join(header).decode(errors='replace')})")
        size = int(header[2])
        data = self.proc.stdout.read(size + 1)[:size]
        return header[0].decode(), header[1], data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def parse_tree(data: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """A raw tree object's entries: ``name -> (mode, raw sha)``."""
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        entries[data[space + 1:nul]] = (data[at:space], data[nul + 1:nul + 21])
        at = nul + 21
    return entries


def tree_bytes(entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    """A raw tree object, its entries in git's order (a tree's name sorts as ``name/``)."""
    def order(item: tuple[bytes, tuple[bytes, bytes]]) -> bytes:
        return item[0] + b"/" if item[1][0] == TREE_MODE else item[0]

    return b"".join(mode + b" " + name + b"\0" + sha
                    for name, (mode, sha) in sorted(entries.items(), key=order))


class _Writer:
    """Loose objects, written as git writes them; fsynced (with their directories) at
    ``flush``, before the ref that names them moves."""

    def __init__(self, git_dir: Path) -> None:
        self.objects = git_dir / "objects"
        self.folders: set[Path] = set()

    def put(self, kind: bytes, data: bytes) -> bytes:
        raw = b"%s %d\0" % (kind, len(data)) + data
        digest = hashlib.sha1(raw)
        sha = digest.hexdigest()
        folder = self.objects / sha[:2]
        path = folder / sha[2:]
        present = path.exists()
        if present and loose_object_whole(path):
            return digest.digest()
        if not folder.is_dir():
            folder.mkdir(exist_ok=True)
            self.folders.add(self.objects)
        tmp = folder / f"tmp_obj_outerloop_{os.getpid()}_{sha[2:10]}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o444)
            try:
                view = memoryview(zlib.compress(raw, 1))
                while view:
                    view = view[os.write(fd, view):]
                if durable():
                    os.fsync(fd)
            finally:
                os.close(fd)
            if present:  # a copy a crash left broken: git would take it as whole
                os.replace(tmp, path)
            else:
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        self.folders.add(folder)
        return digest.digest()

    def flush(self) -> None:
        if durable():
            for folder in sorted(self.folders, reverse=True):
                fsync_dir(folder)


def blob_sha(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).digest()


def _edits(ledger: Path, keys: Iterable[str]) -> _Dir:
    """The changed files as a tree of edits, with their contents."""
    root = _Dir()
    for key in sorted(set(keys)):
        parts = key.encode("utf-8", "surrogateescape").split(b"/")
        if not key or any(p in (b"", b".", b"..", b".git") for p in parts):
            raise Unable(f"not a ledger file name: {key!r}")
        node = root
        for part in parts[:-1]:
            node = node.dirs.setdefault(part, _Dir())
        path = ledger / key
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            node.files[parts[-1]] = None
            continue
        if not stat.S_ISREG(info.st_mode):
            raise Unable(f"ledger/{key} is not a regular file")
        mode = b"100755" if info.st_mode & 0o100 else b"100644"
        node.files[parts[-1]] = (mode, path.read_bytes())
    return root


def _build(node: _Dir, tree: bytes | None, reader: _Reader, writer: _Writer) -> bytes | None:
    """The raw sha of ``tree`` (a raw sha, None: none yet) with ``node``'s edits made;
    None when it ends empty."""
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    if tree is not None:
        _, kind, data = reader.get(tree.hex())
        if kind != b"tree":
            raise Unable(f"{tree.hex()} is a {kind.decode(errors='replace')}, not a tree")
        entries = parse_tree(data)
    before = dict(entries)
    for name, child in node.dirs.items():
        old = entries.get(name)
        sub = _build(child, old[1] if old and old[0] == TREE_MODE else None, reader, writer)
        if old is not None and old[0] != TREE_MODE:
            raise Unable(f"{name.decode(errors='replace')} is a file in HEAD, a folder now")
        if sub is None:
            entries.pop(name, None)
        else:
            entries[name] = (TREE_MODE, sub)
    for name, now in node.files.items():
        old = entries.get(name)
        if old is not None and old[0] == TREE_MODE:
            raise Unable(f"{name.decode(errors='replace')} is a folder in HEAD, a file now")
        if now is None:
            entries.pop(name, None)
        elif old != (now[0], blob_sha(now[1])):
            entries[name] = (now[0], writer.put(b"blob", now[1]))
    if tree is not None and entries == before:
        return tree
    if not entries:
        return None
    return writer.put(b"tree", tree_bytes(entries))


def commit(ledger: Path, keys: Iterable[str], message: str, stamp: int,
           argv: list[str], run: Callable[..., subprocess.CompletedProcess[str]]
           ) -> str | None:
    """Commit ``keys`` (ledger-relative paths; a gone file leaves the tree) on ``HEAD``:
    the new commit's sha, or None when every file is as ``HEAD`` has it. ``argv``: git
    with its ``-c`` options; ``run(*args)``: one git command in ``ledger``."""
    git_dir = ledger / ".git"
    writer = _Writer(git_dir)
    reader = _Reader(ledger, argv)
    try:
        head, kind, data = reader.get("HEAD")
        if kind != b"commit" or len(head) != HEX_LEN or not data.startswith(b"tree "):
            raise Unable(f"HEAD is not a commit git writes with sha-1 ({kind!r})")
        tree = bytes.fromhex(data[5:5 + HEX_LEN].decode())
        edits = _edits(ledger, keys)
        new_tree = _build(edits, tree, reader, writer)
    finally:
        reader.close()
    if new_tree == tree:
        return None
    if new_tree is None:
        raise Unable("the commit would leave the ledger empty")
    body = (f"tree {new_tree.hex()}\nparent {head}\n"
            f"author {IDENTITY} {stamp} +0000\ncommitter {IDENTITY} {stamp} +0000\n\n"
            f"{message}\n").encode()
    sha = writer.put(b"commit", body).hex()
    writer.flush()
    moved = run("update-ref", "-m", f"commit: {message}", "HEAD", sha, head)
    if moved.returncode != 0:
        raise Unable(f"git update-ref failed: {(moved.stderr or moved.stdout).strip()[:300]}")
    return sha


INDEX_OPTIONS = ("-c", "core.splitIndex=true", "-c", "core.fsync=committed")
"""The index, a stat cache now that no commit is built from it, is written split (the
few entries that changed beside a shared index of the rest, which is read but not
written again) and not fsynced: a crash that empties it costs the next commit a
``git add -A`` and its repair (``gitrepair``), never a line."""


GC_AUTO = 6700
"""git's own ``gc.auto``: this many loose objects and ``git gc --auto`` packs them."""


def loose_objects_many(git_dir: Path) -> bool:
    """Whether ``git gc --auto`` would pack: as git estimates it, from one of the 256
    loose-object folders (``objects/17``) holding more than its share of ``GC_AUTO``."""
    try:
        return len(os.listdir(git_dir / "objects" / "17")) > -(-GC_AUTO // 256)
    except FileNotFoundError:
        return False


class IndexUpdate:
    """``git update-index`` of ``keys``, run beside the commit (it hashes the files
    itself, so it needs nothing the commit writes); ``wait`` for its problem or None.

    Should the commit fail after it, the index names what ``HEAD`` lacks: the journal
    still names those files, and the next commit takes them."""

    def __init__(self, ledger: Path, argv: list[str], keys: Iterable[str]) -> None:
        import tempfile

        names = "".join(f"{key}\0" for key in sorted(set(keys)))
        with tempfile.TemporaryFile() as listed:
            listed.write(names.encode("utf-8", "surrogateescape"))
            listed.seek(0)
            self.proc = child_wait.Popen(
                [*argv, *INDEX_OPTIONS, "update-index", "--add", "--remove", "-z", "--stdin"],
                cwd=ledger, stdin=listed, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def wait(self, timeout_s: float) -> str | None:
        try:
            out, err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return f"git update-index took over {timeout_s:.0f} s"
        if self.proc.returncode != 0:
            said = " ".join((err or out).decode(errors="replace").split())[:300]
            return f"git update-index failed: {said or f'exit {self.proc.returncode}'}"
        return None
