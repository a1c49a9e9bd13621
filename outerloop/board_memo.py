"""What each board was last rendered from, so a board whose view did not change is not
rendered again.

A board's files (``index.html``, ``CLIMB.md``, ``status.json``) are a pure function of
its ``BoardView`` and the code that renders it (``board.py``'s filters, the templates,
jinja2). Rendering costs ~30 ms a board, and importing jinja2 as much again; the tick
after a busy one folds only that tick's own events (its record published, its comment
posted), which change no board, and rendered both boards (the home's, the research-log
record's) only to find them unchanged.

The memo keeps, per board, the digest of the view it was rendered from and the digest
of the files it made, in ``<home>/cache/board-memo.json`` under a key of the rendering
code (``code_key``): another version of that code renders afresh. The view is digested
as MessagePack with unordered collections sorted (``msgspec``'s deterministic order), so
an equal view digests alike in every process. Kernel-owned (no sandboxed child reaches
the home), deletable like the rest of ``cache/``: a missing or unreadable memo costs a
render, never a wrong board. The memo is read before the lanes plan and written after
the board, by the tick; the lanes only consult and add to it in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outerloop.atomic import write_atomic

MEMO_FILE = Path("cache") / "board-memo.json"
RENDERING_MODULES = ("outerloop.board", "outerloop.board_chart", "outerloop.numfmt",
                     "outerloop.text", "outerloop.clock", "jinja2", "markupsafe")
"""The code a board's files come from besides its view (and the templates)."""
HOME_BOARD = "home"
"""The memo's name for ``<home>/board/``; a target's research-log board is ``target:R``."""


def code_key() -> str:
    """The versions, the rendering modules' sources and the templates (size, mtime): a
    short hash. A module not imported yet (jinja2, on a tick that has not rendered) is
    found where it would be imported from, not imported."""
    from outerloop.validated import code_fingerprint

    parts = [code_fingerprint(RENDERING_MODULES)]
    templates = Path(__file__).resolve().parent / "templates"
    with os.scandir(templates) as found:
        for entry in sorted(found, key=lambda e: e.name):
            info = entry.stat()
            parts.append(f"{entry.name}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def view_key(view: object) -> str:
    """The digest of a board's view: equal views, equal keys, in any process."""
    import msgspec

    return hashlib.sha256(msgspec.msgpack.encode(view, order="deterministic")).hexdigest()


def files_digest(files: dict[str, str]) -> str:
    """The digest of a board's files by name (as the research-log record digests its)."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return h.hexdigest()[:16]


@dataclass
class BoardMemo:
    """Per board name, (the key of the view it was last rendered from, the digest of
    the files that made). ``changed``: something was added since it was read."""

    code: str
    boards: dict[str, tuple[str, str]] = field(default_factory=dict)
    changed: bool = False

    def rendered(self, name: str, key: str) -> str | None:
        """The digest of the files board ``name`` made from the view keyed ``key``, or
        None: not rendered from that view (render it)."""
        kept = self.boards.get(name)
        return kept[1] if kept is not None and kept[0] == key else None

    def remember(self, name: str, key: str, digest: str) -> None:
        if self.boards.get(name) != (key, digest):
            self.boards[name] = (key, digest)
            self.changed = True


def load(home: Path) -> BoardMemo:
    """The home's memo for this code, or an empty one (none kept, another code's, or
    not one this version wrote)."""
    code = code_key()
    try:
        kept: Any = json.loads((home / MEMO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return BoardMemo(code)
    if not isinstance(kept, dict) or kept.get("code") != code:
        return BoardMemo(code)
    boards = kept.get("boards")
    if not isinstance(boards, dict):
        return BoardMemo(code)
    memo = BoardMemo(code)
    for name, pair in boards.items():
        if (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(part, str) for part in pair)):
            memo.boards[name] = (pair[0], pair[1])
    return memo


def save(home: Path, memo: BoardMemo) -> None:
    """Keep ``memo`` when it changed; best effort (a full disk costs a render later)."""
    if not memo.changed:
        return
    text = json.dumps({"code": memo.code, "boards": {n: list(p) for n, p in
                                                     sorted(memo.boards.items())}})
    try:
        (home / MEMO_FILE).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(home / MEMO_FILE, text + "\n")
    except OSError:
        return
    memo.changed = False
