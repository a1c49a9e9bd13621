"""The suite compiles the kernel once before its workers start (``tests/conftest.py``):
with ``PYTHONDONTWRITEBYTECODE`` set nothing else writes bytecode, and every process a
test starts would compile each module it imports again."""

from __future__ import annotations

import importlib.util
from pathlib import Path

KERNEL = Path(__file__).resolve().parents[2] / "outerloop"


def test_every_kernel_module_has_bytecode_as_new_as_its_source() -> None:
    stale = []
    for source in sorted(KERNEL.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.exists():
            stale.append(f"{source.relative_to(KERNEL)}: no bytecode")
            continue
        header = cached.read_bytes()[:16]
        flags = int.from_bytes(header[4:8], "little")
        if flags:
            continue  # hash-based bytecode checks its source itself
        mtime = int.from_bytes(header[8:12], "little")
        size = int.from_bytes(header[12:16], "little")
        info = source.stat()
        if (mtime, size) != (int(info.st_mtime) & 0xFFFFFFFF, info.st_size & 0xFFFFFFFF):
            stale.append(f"{source.relative_to(KERNEL)}: bytecode older than its source")
    assert not stale, stale[:10]
