"""Housekeeping: free the disk of runs that ended more than a day ago.

An ended run's clones (``ws/``, ``kernel/``, ``trees/``) and session home are removed
24 h after its ending, at most ``MAX_CLEANS_PER_TICK`` runs per tick so a tick after a
long pause stays short. Prompts, job logs and the report stay. (Archiving to object
storage, ``archive_to``, is not built yet.)
"""

from __future__ import annotations

from typing import Any

from outerloop.actions import CleanWorkspace
from outerloop.lanes.common import not_done, seconds_since
from outerloop.lanes.view import TickView

CLEAN_AFTER_S = 24 * 3600
MAX_CLEANS_PER_TICK = 5


def plan(view: TickView, planned: list[Any]) -> list[Any]:
    actions: list[Any] = []
    for run in view.state.runs.values():
        if len(actions) >= MAX_CLEANS_PER_TICK:
            break
        if not run.ended or run.cleaned or \
                seconds_since(run.ended_at, view.obs.now) < CLEAN_AFTER_S:
            continue
        action = CleanWorkspace(target=run.target, run=run.run_id)
        if not_done(view.state, action):
            actions.append(action)
    return actions
