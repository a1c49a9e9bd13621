"""Lanes: pure planners. Each reads a ``TickView`` and returns actions; none
performs an effect (a test imports every lane and checks it imports no effector)."""

from __future__ import annotations

from outerloop.kernel.actions import Action
from outerloop.kernel.lanes.view import TickView


def plan(view: TickView) -> list[Action]:
    """Every lane, in the tick's order: alarms (a target's contract), sweep, endpoints
    (model endpoints' latches, runs waiting on them), followup, lines (the research lines'
    pushes), steering (a live run's issue thread), human (a run's issue told of a step
    waiting on a person), deps (the dependency caches), integrate (credited wins proposed
    for combining, and what a merged combination supersedes), intake, admission, width_status
    (a wide issue's one status comment), housekeeping, then the research-log record."""
    from outerloop.kernel.lanes import (
        admission,
        alarms,
        deps,
        endpoints,
        followup,
        housekeeping,
        human,
        intake,
        integrate,
        lines,
        record,
        steering,
        sweep,
        width_status,
    )

    actions: list[Action] = []
    for lane in (alarms, sweep, endpoints, followup, lines, steering, human, deps,
                 integrate, intake, admission, width_status, housekeeping, record):
        actions.extend(lane.plan(view, actions))
    return actions
