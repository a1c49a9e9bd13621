"""The intake lane (planner)."""

from __future__ import annotations

from typing import Any

from outerloop.lanes.view import TickView


def plan(view: TickView, planned: list[Any]) -> list[Any]:
    return []
