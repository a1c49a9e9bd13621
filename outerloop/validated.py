"""Validated models kept under the home, by what they were validated from.

Every tick validates the same settings (``outerloop.toml`` and the environment) and the
same contracts (the bytes of each target's ``.outerloop.yaml``). pydantic builds a
model's validator the first time it validates one (the models ``defer_build``), and
building the settings' and the contract's validators cost a tick ~40 ms, more than the
validation. So the validated object is pickled in ``<home>/cache/validated/`` under a
key made of its input and of the code that validates it, and a later process with the
same input and the same code unpickles it: no validator is built.

The key holds the input's bytes (hashed), Python's, pydantic's and outerloop's versions,
and the size and mtime of each source file the validating models live in (an edited
checkout makes a new key; a stale object is never read back). Kernel-owned, like the
fold cache: no sandboxed child reaches the home (not ``/tmp``, where an agent could
plant a pickle). Deletable. Writing is best effort: a full disk costs the validation,
never the answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from outerloop.atomic import write_atomic

VALIDATED_DIR = Path("cache") / "validated"
KEEP_S = 86_400
"""An entry not written for a day (other settings, other code) is removed on a write."""

T = TypeVar("T")


def _source_of(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    if module is not None:
        return getattr(module, "__file__", None)
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def code_fingerprint(modules: Sequence[str]) -> str:
    """The versions and each module's source (size, mtime): what validates the input.
    A module not imported yet (the contract's yaml loader, imported only to parse) is
    found where it would be imported from, not imported."""
    import pydantic

    from outerloop import __version__

    parts = [sys.version, pydantic.VERSION, __version__]
    for name in modules:
        source = _source_of(name)
        if not source:
            parts.append(f"{name}:-")
            continue
        try:
            info = os.stat(source)
        except OSError:
            parts.append(f"{name}:?")
            continue
        parts.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts)


def kept(home: Path, kind: str, source: bytes, modules: Sequence[str], of: type[T],
         validate: Callable[[], T]) -> T:
    """``validate()``'s result for ``source``, read back when this code validated the
    same ``source`` before (``kind`` names the entry: ``settings``, ``contract``).
    ``validate`` raising is not kept: each process raises it again."""
    key = hashlib.sha256(source + b"\0" + code_fingerprint(modules).encode()).hexdigest()
    folder = home / VALIDATED_DIR
    path = folder / f"{kind}-{key[:32]}.pickle"
    try:
        found = pickle.loads(path.read_bytes())
    except Exception:  # absent, cut short, or of code that is gone: validate anew
        found = None
    if isinstance(found, of):
        return found
    value = validate()
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        _forget_old(folder, kind, path.name)
    return value


def _forget_old(folder: Path, kind: str, keep: str) -> None:
    too_old = time.time() - KEEP_S
    for old in folder.glob(f"{kind}-*.pickle"):
        with contextlib.suppress(OSError):
            if old.name != keep and old.stat().st_mtime < too_old:
                old.unlink()
