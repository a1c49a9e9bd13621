"""The sandbox warning a tick and its board show, proved again when it may have changed.

``resolve.off_warning`` says whether agent code would run unconfined or could reach the
host's services; under ``auto`` that means starting bubblewrap for real (~5-10 ms and
the sandbox's modules, on every tick that found nothing to do). What it depends on
changes rarely: the ``[sandbox]`` settings, which ``bwrap`` is found on ``PATH`` and its
file, the kernel (Landlock's ABI comes with it). So the tick keeps its last answer in
``<home>/cache/sandbox-proved.json`` with a fingerprint of those, and proves again when
the fingerprint changes or ``RECHECK_S`` has passed, whatever the last answer was: a
sandbox that stopped working for another reason (user namespaces turned off) is said
within that time. Jobs never read this: every confined child resolves its sandbox
afresh (``resolve.for_children``), and ``status`` and ``doctor`` prove it themselves.

Kernel-owned like the rest of ``cache/`` (no sandboxed child reaches the home);
deletable: a missing or unreadable proof costs a probe, never a missed warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from outerloop import clock, kept_proof
from outerloop.config import SandboxSettings, environ

PROVED_FILE = Path("cache") / "sandbox-proved.json"
RECHECK_S = 600.0
"""How long a kept answer is said without proving it again (fingerprint unchanged)."""


def fingerprint(settings: SandboxSettings) -> str:
    """What the warning depends on that a tick can see without probing."""
    parts: list[Any] = [repr(settings), environ().get("PATH", ""), os.uname().release]
    for binary in (shutil.which("bwrap"), "/usr/bin/bwrap"):
        try:
            info = os.stat(binary) if binary else None
        except OSError:
            info = None
        parts.append([binary, info and [info.st_size, info.st_mtime_ns, info.st_mode]])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def tick_warning(home: Path, settings: SandboxSettings) -> str | None:
    """``resolve.off_warning(settings)``, from the kept proof while it holds."""
    mark = fingerprint(settings)
    now = clock.now().timestamp()
    kept = _read(home / PROVED_FILE)
    if kept is not None and kept["mark"] == mark and 0 <= now - kept["at"] < RECHECK_S:
        warning: str | None = kept["warning"]
        return warning
    from outerloop.sandbox.resolve import off_warning

    warning = off_warning(settings)
    kept_proof.keep(home / PROVED_FILE, {"mark": mark, "warning": warning, "at": now})
    return warning


def _read(proved: Path) -> dict[str, Any] | None:
    """The kept proof, or None (none, damaged, or not of this shape: prove again)."""
    text = kept_proof.read_text(proved)
    try:
        kept = json.loads(text) if text is not None else None
    except ValueError:
        return None
    if not (isinstance(kept, dict) and isinstance(kept.get("mark"), str)
            and (kept.get("warning") is None or isinstance(kept.get("warning"), str))
            and isinstance(kept.get("at"), int | float) and "warning" in kept):
        return None
    return kept
