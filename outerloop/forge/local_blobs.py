"""The local forge's file reads at a full commit sha, kept: a commit's bytes never change,
so a read at the same commit needs no ``git cat-file`` process again.

Every tick reads each target's contract at its default branch's head. On GitHub that
read is served from the HTTP cache without a request (``githubhttp``: contents at a full
sha are immutable); here ``file_at`` keeps, per (repository, path), the last commit read
and its bytes, under the forge's root (``.files-at-commits/``, which no repository
listing matches). Only bytes are kept: "no such file" is read again, since a sha asked
before it was pushed may name a commit later. Kernel-owned, like the rest of the forge:
no sandboxed child reaches it. Deletable; a write that fails costs one more read.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from outerloop.atomic import write_atomic

MEMO_DIR = ".files-at-commits"
SHA_CHARS = frozenset("0123456789abcdef")


def is_commit_sha(ref: str) -> bool:
    """A full commit sha (SHA-1 or SHA-256), not a name that can move."""
    return len(ref) in (40, 64) and set(ref) <= SHA_CHARS


def file_at(root: Path, repo: str, path: str, ref: str,
            read: Callable[[], bytes | None]) -> bytes | None:
    """``read()`` (the file at ``ref``), or the bytes kept when the last read of
    ``repo``'s ``path`` was at the same commit. A ref that is not a full commit sha (a
    branch moves) is always read."""
    if not is_commit_sha(ref):
        return read()
    memo = root / MEMO_DIR / (hashlib.sha256(f"{repo}\0{path}".encode()).hexdigest()[:32]
                              + ".json")
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        kept = json.loads(memo.read_text(encoding="utf-8"))
        if kept["repo"] == repo and kept["path"] == path and kept["sha"] == ref:
            return base64.b64decode(kept["body"], validate=True)
    answer = read()
    if answer is not None:
        record = {"repo": repo, "path": path, "sha": ref,
                  "body": base64.b64encode(answer).decode()}
        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(memo, json.dumps(record))
    return answer
