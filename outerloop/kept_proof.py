"""A tick's kept proofs: what it proved about its machine (the environment's traps, the
sandbox's warning), kept in ``<home>/cache/`` so the next tick need not prove it again.

Derived and deletable like the rest of ``cache/``: a proof that cannot be written is
proved again next tick, one that cannot be read is proved again now. Kernel-owned: no
sandboxed child reaches the home.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def keep(path: Path, proof: dict[str, Any]) -> None:
    """Write ``proof`` as one JSON line; a failure (a full disk) is no failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(proof) + "\n", encoding="utf-8")
    except OSError:
        pass  # proved again next tick


def read_text(path: Path) -> str | None:
    """The kept proof's text, or None (none, or unreadable)."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
