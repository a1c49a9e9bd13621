"""Blobs of the agent's files, hashed and written into the kernel's git dir by Python.

No git process reads the work tree to seal it: git would apply the tree's attributes
(a filter, a ``process`` driver, a ``working-tree-encoding``) and, for a nested
repository, its config. Here each regular file is read through ``sandbox/beneath``
(no symlink followed on the way, no FIFO opened: ``NotRegular``), each symlink's target
read with ``readlink``, and the bytes hashed as a git blob as they are (what
``hash-object --no-filters`` does). The objects the repository lacks (one ``cat-file
--batch-check`` asks) are written as loose objects, zlib-compressed, under a temporary
name then renamed: what git itself does, without a process per object (``bench/seal.py``
measures both ways).

A file rewritten between its hash and its write (a process the agent left behind) is
caught: the bytes written are hashed again and must give the same name, else
``Changed`` and nothing is renamed into place.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets
import stat
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from outerloop.forge import localgit as g
from outerloop.sandbox import beneath

CHUNK_BYTES = 1024 * 1024
LOOSE_LEVEL = 1
"""git's ``core.looseCompression`` default (``Z_BEST_SPEED``)."""
FILE, EXECUTABLE, LINK, GITLINK = "100644", "100755", "120000", "160000"


class Changed(Exception):
    """A file changed between two reads of one seal (``path``)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def algorithm(base: str) -> str:
    """The repository's object hash, from the length of a name it uses."""
    return "sha256" if len(base) == 64 else "sha1"


def _by_folder(ws: Path, rels: Iterable[str]) -> Iterator[tuple[int, str, str]]:
    """``(folder descriptor, rel, name)`` for each of ``rels``, every folder opened once
    through ``beneath`` (no symlink on the way). A folder that cannot be reached so
    yields ``-1`` for its files (the caller reports them changed)."""
    ordered = sorted(rels, key=lambda r: r.rpartition("/")[0])
    for folder, grouped in itertools.groupby(ordered, key=lambda r: r.rpartition("/")[0]):
        group = list(grouped)
        try:
            with beneath.directory(ws, folder) as fd:
                for rel in group:
                    yield fd, rel, rel.rpartition("/")[2]
        except OSError:
            for rel in group:
                yield -1, rel, rel.rpartition("/")[2]


def _open_file(fd: int, name: str) -> tuple[int, os.stat_result]:
    """``name`` in the folder ``fd``, opened without following a link or waiting on a
    FIFO, and its ``fstat``; ``NotRegular`` for anything but a regular file."""
    if fd < 0:
        raise FileNotFoundError(name)
    handle = os.open(name, beneath.READ_FLAGS, dir_fd=fd)
    info = os.fstat(handle)
    if not stat.S_ISREG(info.st_mode):
        os.close(handle)
        raise beneath.NotRegular(name)
    return handle, info


def _chunks(handle: int) -> Iterator[bytes]:
    while chunk := os.read(handle, CHUNK_BYTES):
        yield chunk


def blob_ids(ws: Path, wanted: Iterable[tuple[str, str]], algo: str,
             ) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """``{rel: (mode, blob name)}`` of the files and symlinks ``wanted`` (``(rel,
    FILE or LINK)``), each read once, as data; and the paths that were not what the walk
    saw any more (gone, a FIFO now, a link on the way).

    A regular file's mode comes from the descriptor that was read (``100755`` when the
    owner may execute it), so the mode and the bytes are of one file."""
    modes = dict(wanted)
    out: dict[str, tuple[str, str]] = {}
    changed = []
    for fd, rel, name in _by_folder(ws, modes):
        try:
            if modes[rel] == LINK:
                if fd < 0:
                    raise FileNotFoundError(rel)
                out[rel] = (LINK, _name(algo, [os.readlink(os.fsencode(name), dir_fd=fd)]))
                continue
            handle, info = _open_file(fd, name)
            try:
                digest = hashlib.new(algo, b"blob %d\0" % info.st_size)
                got = 0
                for chunk in _chunks(handle):
                    digest.update(chunk)
                    got += len(chunk)
            finally:
                os.close(handle)
            if got != info.st_size:
                raise Changed(rel)
            out[rel] = (EXECUTABLE if info.st_mode & stat.S_IXUSR else FILE, digest.hexdigest())
        except (Changed, OSError):
            changed.append(rel)
    return out, changed


def _name(algo: str, parts: list[bytes]) -> str:
    size = sum(len(p) for p in parts)
    digest = hashlib.new(algo, b"blob %d\0" % size)
    for part in parts:
        digest.update(part)
    return digest.hexdigest()


def missing(git_dir: Path, names: Iterable[str]) -> set[str]:
    """Which of ``names`` the repository at ``git_dir`` lacks (one ``cat-file``)."""
    wanted = sorted(set(names))
    if not wanted:
        return set()
    out = g.git(["cat-file", "--batch-check=%(objectname)"], git_dir=git_dir,
                stdin="".join(f"{n}\n" for n in wanted).encode())
    return {line.split()[0] for line in out.decode().splitlines() if line.endswith(" missing")}


def write_blobs(git_dir: Path, ws: Path, entries: dict[str, tuple[str, str]],
                algo: str) -> list[str]:
    """Write the blobs of ``entries`` (``{rel: (mode, name)}``) as loose objects of
    ``git_dir``, each file read again through its folder's descriptor; the paths whose
    bytes no longer give their name (rewritten since ``blob_ids``: nothing of theirs is
    renamed into place)."""
    changed = []
    for fd, rel, name in _by_folder(ws, entries):
        mode, blob = entries[rel]
        try:
            if mode == LINK:
                if fd < 0:
                    raise FileNotFoundError(rel)
                data = os.readlink(os.fsencode(name), dir_fd=fd)
                _write_loose(git_dir, blob, algo, [data], len(data), rel)
                continue
            handle, info = _open_file(fd, name)
            try:
                _write_loose(git_dir, blob, algo, _chunks(handle), info.st_size, rel)
            finally:
                os.close(handle)
        except (Changed, OSError):
            changed.append(rel)
    return changed


def _write_loose(git_dir: Path, name: str, algo: str, chunks: Iterable[bytes], size: int,
                 rel: str) -> None:
    """The object ``name`` from ``chunks``: compressed into a temporary file, renamed
    into place only when the bytes hash to ``name``."""
    folder = git_dir / "objects" / name[:2]
    final = folder / name[2:]
    if final.exists():
        return
    folder.mkdir(exist_ok=True)
    tmp = folder / f"tmp_obj_{secrets.token_hex(8)}"
    try:
        with tmp.open("xb") as out:
            _compress(out, algo, chunks, size, name, rel)
        os.chmod(tmp, 0o444)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def _compress(out: BinaryIO, algo: str, chunks: Iterable[bytes], size: int, name: str,
              rel: str) -> None:
    header = b"blob %d\0" % size
    digest = hashlib.new(algo, header)
    packer = zlib.compressobj(LOOSE_LEVEL)
    out.write(packer.compress(header))
    got = 0
    for chunk in chunks:
        digest.update(chunk)
        got += len(chunk)
        out.write(packer.compress(chunk))
    out.write(packer.flush())
    if got != size or digest.hexdigest() != name:
        raise Changed(rel)
