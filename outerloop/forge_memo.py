"""What a forge answered about a file at a commit, kept under the home: a commit's bytes
never change, so a tick asks the forge again only when the commit it reads at moved.

Every tick reads each target's contract at its default branch's head: a ``git
cat-file`` process on the local forge, an API call on GitHub. ``file_at`` keeps, per
(repository, path), the last commit asked and the answer (the bytes, or none), in
``<home>/cache/forge-files/``. Kernel-owned, like the fold cache: no sandboxed child
reaches the home. Deletable; a write that fails costs the next tick one more read.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from outerloop.atomic import write_atomic

MEMO_DIR = Path("cache") / "forge-files"
SHA_CHARS = frozenset("0123456789abcdef")


def _is_commit_sha(ref: str) -> bool:
    return len(ref) in (40, 64) and set(ref) <= SHA_CHARS


def file_at(home: Path, repo: str, path: str, sha: str,
            read: Callable[[], bytes | None]) -> bytes | None:
    """``read()`` (the forge's answer for ``repo``'s ``path`` at commit ``sha``), or
    the answer kept when the last one asked was at the same commit. A ref that is not
    a full commit sha (a branch moves) is always read."""
    if not _is_commit_sha(sha):
        return read()
    memo = home / MEMO_DIR / (hashlib.sha256(f"{repo}\0{path}".encode()).hexdigest()[:32]
                              + ".json")
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        kept = json.loads(memo.read_text(encoding="utf-8"))
        if kept["repo"] == repo and kept["path"] == path and kept["sha"] == sha:
            body = kept["body"]
            return None if body is None else base64.b64decode(body, validate=True)
    answer = read()
    record = {"repo": repo, "path": path, "sha": sha,
              "body": None if answer is None else base64.b64encode(answer).decode()}
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(memo, json.dumps(record))
    return answer
