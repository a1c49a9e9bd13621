"""Compiled templates kept under the home, so a tick that renders does not compile.

jinja2 turns a template into Python source and compiles it: about 35 ms for the board's
HTML and as much for ``CLIMB.md``, paid by every tick that draws a board (most busy
ticks). ``bytecode_cache`` keeps the compiled code in ``<home>/cache/templates/``:
kernel-owned (no sandboxed child reaches the home), deletable like the rest of
``cache/``. Not ``/tmp``: code loaded from a place an agent could write would run in
the kernel.

A cached entry is used only for the same template source (jinja2 checks a checksum) and
the same Python (its magic); the folder is further named by everything else that shapes
the compiled code (jinja2's version, the environment's syntax and autoescape options),
so a change to any of them compiles afresh instead of running stale code. Writing is
best effort: a full disk or an unwritable folder costs the compile, never the render.

A process that renders for many homes (the test suite, a fleet view) keeps what it
compiled or read in memory too (``_COMPILED``), under the same three keys: the same
source, options and Python give the same code whichever home it was compiled for.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jinja2 import BytecodeCache, Environment
    from jinja2.bccache import Bucket

TEMPLATES_CACHE = Path("cache") / "templates"
"""Under the home: the compiled templates."""

_COMPILED: dict[tuple[str, str, str], CodeType] = {}
"""This process's compiled templates by (the folder's fingerprint, jinja2's key for the
template, its source checksum)."""


def forget_compiled() -> None:
    """Drop what this process holds in memory (as a new process starts with nothing)."""
    _COMPILED.clear()


def compile_fingerprint(env: Environment) -> str:
    """What, besides a template's source, shapes its compiled code: a short hash."""
    import jinja2

    shape = (jinja2.__version__, env.block_start_string, env.block_end_string,
             env.variable_start_string, env.variable_end_string,
             env.comment_start_string, env.comment_end_string,
             env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks,
             env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline,
             env.optimized, repr(env.autoescape), sorted(env.extensions))
    return hashlib.sha256(repr(shape).encode()).hexdigest()[:16]


def attach(env: Environment, home: Path) -> Environment:
    """``env`` with its compiled templates kept under ``home``; ``env`` unchanged when
    the folder cannot be made (a read-only home: compile every time)."""
    folder = home / TEMPLATES_CACHE / compile_fingerprint(env)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return env
    env.bytecode_cache = _best_effort_cache(folder)
    return env


def _best_effort_cache(folder: Path) -> BytecodeCache:
    from jinja2 import FileSystemBytecodeCache

    class BestEffortCache(FileSystemBytecodeCache):
        """An entry that is missing or cannot be read back (cut short by a crash:
        jinja2 itself raises on a truncated header) compiles afresh; a write that fails
        is dropped."""

        def load_bytecode(self, bucket: Bucket) -> None:
            held = _COMPILED.get(self._memory_key(bucket))
            if held is not None:
                bucket.code = held
                return
            try:
                super().load_bytecode(bucket)
            except Exception:  # any damage: the entry is as good as absent
                bucket.reset()
            if bucket.code is not None:
                _COMPILED[self._memory_key(bucket)] = bucket.code

        def dump_bytecode(self, bucket: Bucket) -> None:
            if bucket.code is not None:
                _COMPILED[self._memory_key(bucket)] = bucket.code
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

        @staticmethod
        def _memory_key(bucket: Bucket) -> tuple[str, str, str]:
            return (folder.name, bucket.key, bucket.checksum)

    return BestEffortCache(str(folder))
