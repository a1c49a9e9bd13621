"""The effective settings as a file a job loads (``OUTERLOOP_SETTINGS_SNAPSHOT``).

A job does what the process that submitted it was configured to do: the submitter
writes its validated settings here, named by their content, and the job's
``load_settings`` reads that file instead of ``outerloop.toml`` and its own
environment (``config._snapshot``, the one reader, beside the other environment reads).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Protocol

SNAPSHOT_VAR = "OUTERLOOP_SETTINGS_SNAPSHOT"
SNAPSHOT_DIR = "cache/settings"


class _Snapshotted(Protocol):
    """What a snapshot is made of: ``config.Settings`` (not imported: it imports this)."""

    @property
    def home(self) -> Path: ...

    def model_dump_json(self, *, indent: int | None = None) -> str: ...


def _snapshot_text(settings: _Snapshotted) -> tuple[str, Path]:
    text = settings.model_dump_json(indent=1) + "\n"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return text, settings.home / SNAPSHOT_DIR / f"{digest}.json"


def snapshot_path(settings: _Snapshotted) -> Path:
    """Where ``write_snapshot`` puts these settings (pure: named by their content, so a
    planner may name it and the executor write it)."""
    return _snapshot_text(settings)[1]


def write_snapshot(settings: _Snapshotted) -> Path:
    """The effective settings as a file jobs load instead of re-reading
    ``outerloop.toml`` + their own (allowlisted) environment, so a job does what the
    process that submitted it was configured to do. Content-addressed: written once."""
    text, path = _snapshot_text(settings)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return path
