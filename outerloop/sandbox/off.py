"""The ``off`` backend: the child runs unconfined. Only by the operator's explicit
choice (``[sandbox] kind = "off"``), and then every tick, ``status``, ``doctor`` and
the board say so (``select.off_warning``).

Unconfined is not unbounded in time: the child still runs under the reaper
(``python -I -S reaper.py -- argv``), so what it leaves running (``setsid -f``, a
double fork) ends when it ends, as under the other backends.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.sandbox import reaper
from outerloop.sandbox.base import Grants, Kind

REAPER = Path(reaper.__file__).resolve()


@dataclass(frozen=True)
class OffSandbox:
    """``python`` runs ``reaper`` (the kernel's interpreter and file by default; tests
    running as another user pass ones that user can read)."""

    python: str = field(default_factory=lambda: sys.executable)
    reaper: str = str(REAPER)

    @property
    def kind(self) -> Kind:
        return "off"

    def wrap(self, argv: Sequence[str], grants: Grants) -> list[str]:
        return [self.python, "-I", "-S", self.reaper, "--", *argv]
