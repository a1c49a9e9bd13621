"""Housekeeping: free the disk of ended runs.

- An ended run's clones (``ws/``, ``kernel/``, ``trees/``) and session home are removed
  24 h after its ending, at most ``MAX_CLEANS_PER_TICK`` runs per tick so a tick after
  a long pause stays short. Prompts, job logs and the report stay.
- With ``[archive] to`` configured, a run ended more than ``after_days`` ago with none
  of its jobs live gets an archive job (``outerloop.archive``: pack, upload, verify,
  then delete locally). A failed attempt deleted nothing; a new attempt follows on the
  next tick, and after ``QUICK_RETRIES`` failures at most every ``RETRY_AFTER_S``.
- Without an archive, the ``jobs/`` dirs of such runs (its job logs under
  ``runs/<run>/jobs/`` and local compute's ``jobs/<id>/`` records) are pruned
  ``retention_days`` after the ending.

Each reads only the settled runs old enough to be due (``Runs.select`` cut at
``_ended_by``): a long history of runs already cleaned or not yet due costs no record.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from outerloop.archive.spec import archive_spec
from outerloop.clock import DAY_S, stamp
from outerloop.kernel.actions import Action, CleanWorkspace, PruneJobs, SubmitJob
from outerloop.kernel.lanes.common import seconds_since, step_due
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger.state import RunRecord, State
from outerloop.vocabulary import JobPurpose

CLEAN_AFTER_S = DAY_S
MAX_CLEANS_PER_TICK = 5
MAX_ARCHIVES_PER_TICK = 2
MAX_LIVE_ARCHIVES = 2
MAX_PRUNES_PER_TICK = 5
QUICK_RETRIES = 3
RETRY_AFTER_S = 6 * 3600


def _ended_by(now: datetime, after_s: float) -> str:
    """The latest ending of a run due ``after_s`` after it: the selection's cut (the
    lane's own test, ``seconds_since(ended_at, now) < after_s``, then decides)."""
    try:
        return stamp(now - timedelta(seconds=after_s))
    except OverflowError:
        return ""  # before every stamp: no run ended that long ago


def _quiet(state: State, run: RunRecord) -> bool:
    """Ended with none of its jobs live."""
    return run.ended and all(state.jobs[j].terminal for j in run.job_ids if j in state.jobs)


def _archive_live(state: State, run: RunRecord) -> bool:
    return any(j in state.jobs and not state.jobs[j].terminal for j in run.archive_jobs)


def _archive_due(view: TickView, run: RunRecord) -> bool:
    state, now = view.state, view.obs.now
    if run.archive is not None or not _quiet(state, run) or _archive_live(state, run) or \
            seconds_since(run.ended_at, now) < view.settings.archive.after_days * DAY_S:
        return False
    if len(run.archive_jobs) >= QUICK_RETRIES:
        last = state.jobs.get(run.archive_jobs[-1])
        if last is not None and seconds_since(last.ended_at, now) < RETRY_AFTER_S:
            return False
    return True


def _archives(view: TickView) -> list[Action]:
    state, settings = view.state, view.settings
    live = sum(1 for run in state.runs.live() if _archive_live(state, run))  # settled: none
    actions: list[Action] = []
    due = state.runs.select("unarchived", ended_by=_ended_by(
        view.obs.now, settings.archive.after_days * DAY_S))
    for run in sorted(due, key=lambda r: r.ended_at or ""):
        if len(actions) >= MAX_ARCHIVES_PER_TICK or live + len(actions) >= MAX_LIVE_ARCHIVES:
            break
        if not _archive_due(view, run):
            continue
        attempt = len(run.archive_jobs) + 1
        action = SubmitJob(target=run.target, run=run.run_id, purpose=JobPurpose.ARCHIVE,
                           spec=archive_spec(settings, run.target, run.run_id, attempt))
        if step_due(view, action):
            actions.append(action)
    return actions


def _prunes(view: TickView) -> list[Action]:
    state, now = view.state, view.obs.now
    after_s = view.settings.archive.retention_days * DAY_S
    actions: list[Action] = []
    for run in state.runs.select("unpruned", ended_by=_ended_by(now, after_s)):
        if len(actions) >= MAX_PRUNES_PER_TICK:
            break
        if run.pruned or run.archive is not None or not _quiet(state, run) or \
                seconds_since(run.ended_at, now) < after_s:
            continue
        action = PruneJobs(target=run.target, run=run.run_id)
        if step_due(view, action):
            actions.append(action)
    return actions


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    ended_by = _ended_by(view.obs.now, CLEAN_AFTER_S)
    for run in view.state.runs.select("uncleaned", ended_by=ended_by):
        if len(actions) >= MAX_CLEANS_PER_TICK:
            break
        if not run.ended or run.cleaned or run.archive is not None or \
                seconds_since(run.ended_at, view.obs.now) < CLEAN_AFTER_S:
            continue
        if run.line is not None and run.line.unpushed:
            continue  # its kernel clone holds line commits the forge lacks (lanes/lines)
        action = CleanWorkspace(target=run.target, run=run.run_id)
        if step_due(view, action):
            actions.append(action)
    if view.settings.archive.to:
        actions.extend(_archives(view))
    else:
        actions.extend(_prunes(view))
    return actions


