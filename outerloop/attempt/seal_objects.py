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
import os
import secrets
import zlib
from collections.abc import Iterable
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


def _read_link(ws: Path, rel: str) -> bytes:
    return beneath.readlink(ws, rel)


def blob_id(ws: Path, rel: str, mode: str, algo: str) -> tuple[str, str]:
    """``(mode, blob name)`` of the file or symlink ``ws/rel``, read once, as data.

    A regular file's mode comes from the descriptor that was read (``100755`` when the
    owner may execute it), so the mode and the bytes are of one file."""
    if mode == LINK:
        return LINK, _name(algo, [_read_link(ws, rel)])
    with beneath.open_read(ws, rel, links_ok=True) as stream:
        executable = os.fstat(stream.fileno()).st_mode & 0o100
        size = os.fstat(stream.fileno()).st_size
        digest = hashlib.new(algo, b"blob %d\0" % size)
        got = 0
        while chunk := stream.read(CHUNK_BYTES):
            digest.update(chunk)
            got += len(chunk)
        if got != size:
            raise Changed(rel)
    return (EXECUTABLE if executable else FILE), digest.hexdigest()


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


def write_blob(git_dir: Path, ws: Path, rel: str, mode: str, name: str, algo: str) -> None:
    """Write the blob ``name`` from ``ws/rel`` as a loose object of ``git_dir``.

    The bytes are hashed again as they are compressed: a file rewritten since
    ``blob_id`` raises ``Changed`` and leaves only a removed temporary file behind."""
    folder = git_dir / "objects" / name[:2]
    folder.mkdir(exist_ok=True)
    final = folder / name[2:]
    if final.exists():
        return
    tmp = folder / f"tmp_obj_{secrets.token_hex(8)}"
    try:
        with tmp.open("xb") as out:
            if mode == LINK:
                data = _read_link(ws, rel)
                _compress(out, algo, [data], len(data), name, rel)
            else:
                with beneath.open_read(ws, rel, links_ok=True) as stream:
                    size = os.fstat(stream.fileno()).st_size
                    _compress(out, algo, iter(lambda: stream.read(CHUNK_BYTES), b""), size,
                              name, rel)
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
