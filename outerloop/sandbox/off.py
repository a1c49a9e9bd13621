"""The ``off`` backend: the child runs unconfined. Only by the operator's explicit
choice (``[sandbox] kind = "off"``), and then every tick, ``status``, ``doctor`` and
the board say so (``select.off_warning``)."""

from __future__ import annotations

from collections.abc import Sequence

from outerloop.sandbox.base import Grants, Kind


class OffSandbox:
    @property
    def kind(self) -> Kind:
        return "off"

    def wrap(self, argv: Sequence[str], grants: Grants) -> list[str]:
        return list(argv)
