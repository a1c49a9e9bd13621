"""Nothing repeats forever: how many times in a row a run's leg job died without the run
moving on, and the reason it is given up with (issue 46).

A leg job (a wake, a recovery) that dies on something the run carries (a candidate
tree, a value, a name the kernel mishandles) dies the same way each time it is tried
again. So every way the lanes try a run's leg again is counted in a row, and the run
ends ``aborted`` once the count reaches its bound, whatever the run is parked on:

- the sweep's recoveries (a run ``running``, or parked on its jobs or its eval pairs,
  whose leg job ended without parking or ending it): at most ``MAX_RECOVERIES``
  recovery jobs since the run last moved on (``recoveries_in_a_row``);
- the review wakes the followup lane submits for a run in review with feedback to
  deliver: at most ``MAX_RECOVERIES`` + 1 of them dying in a row
  (``failed_wakes_in_a_row``).

"Moved on" is read from the run's leg jobs in registration order: a climb or a wake job
is submitted only when the run starts or parks anew, so the recoveries after the newest
of them are the ones in a row. A ``retry`` (the machine's failure: a full disk, the
deployment, ``lanes/machine.py``), and a review wake that exited ``NO_SPACE_EXIT``, are
passed over: they neither count nor break the row.

The reason (``given_up``) is the run's ending reason, its report's kernel note and so
its issue's: how many deaths, which job, the name of the exception it crashed on when
its stderr ended in a traceback (``Observations.crashed``; never the message, whose
paths are the operator's), and where its stderr is. Pure: reads the ``TickView``.
"""

from __future__ import annotations

from outerloop import infra
from outerloop.infra import NO_SPACE_EXIT
from outerloop.kernel.lanes.common import seconds_since
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger.state import JobRecord, ParkReason, RunRecord, RunState, State
from outerloop.vocabulary import LEG_PURPOSES, JobPurpose, JobState

MAX_RECOVERIES = 2
"""Recovery jobs a run gets in a row (the leg job before them died first)."""


def _legs_newest_first(state: State, run: RunRecord) -> list[JobRecord]:
    """The run's leg jobs, newest registration first, retries left out."""
    return [state.jobs[j] for j in reversed(run.job_ids)
            if j in state.jobs and state.jobs[j].purpose in LEG_PURPOSES
            and state.jobs[j].purpose != JobPurpose.RETRY]


def recoveries_in_a_row(state: State, run: RunRecord) -> list[JobRecord]:
    """The run's recovery jobs since it last moved on (newest first): the recoveries
    registered after its newest climb or wake job, however each ended (one that ended
    well without moving the run on counts too: nothing changed)."""
    row = []
    for job in _legs_newest_first(state, run):
        if job.purpose != JobPurpose.RECOVER:
            break
        row.append(job)
    return row


def failed_wakes_in_a_row(state: State, run: RunRecord) -> list[JobRecord]:
    """The run's newest wake jobs that each ended without completing (newest first),
    up to the newest leg job that completed or was no wake. A wake that exited
    ``infra.NO_SPACE_EXIT`` died of the machine (a full disk, a quota), as a ``retry``
    does: passed over, neither counted nor breaking the row (chaos ended a run in review
    whose wakes a full disk killed three times while comments kept coming)."""
    row = []
    for job in _legs_newest_first(state, run):
        if job.purpose == JobPurpose.WAKE and job.exit_code == NO_SPACE_EXIT:
            continue
        if job.purpose != JobPurpose.WAKE or not job.terminal or \
                job.state == JobState.COMPLETED:
            break
        row.append(job)
    return row


def space_deaths_in_a_row(state: State, run: RunRecord) -> list[JobRecord]:
    """The run's newest wake jobs that each exited ``NO_SPACE_EXIT`` (newest first): the
    followup lane wakes a run in review again only once space is back and
    ``infra.retry_after_s`` of them passed, as the machine lane delivers a leg again."""
    row = []
    for job in _legs_newest_first(state, run):
        if job.purpose != JobPurpose.WAKE or job.exit_code != NO_SPACE_EXIT:
            break
        row.append(job)
    return row


def waits_for_space(view: TickView, run: RunRecord) -> bool:
    """The run's latest review wakes died of a full disk and space is not back, or the
    backoff after such deaths (``infra.retry_after_s``) has not passed."""
    deaths = space_deaths_in_a_row(view.state, run)
    if not deaths:
        return False
    if any(infra.shortage(space) for space in view.obs.space):
        return True
    return seconds_since(deaths[0].ended_at, view.obs.now) < infra.retry_after_s(len(deaths))


def _doing(run: RunRecord) -> str:
    """What the run's dying leg job was doing, in words."""
    if run.state == RunState.PARKED and run.park_reason == ParkReason.EVAL:
        return "reading its eval pairs (the gate, then the review of a credited candidate)"
    if run.state == RunState.PARKED and run.park_reason == ParkReason.JOBS:
        return "waking it after its experiments"
    if run.state == RunState.PARKED and run.park_reason == ParkReason.REVIEW:
        return "delivering its reviewers' feedback"
    if run.pending_request is not None:
        return "acting on the request its last leg made"
    return "running a leg"


def given_up(view: TickView, run: RunRecord, deaths: int, last: JobRecord) -> str:
    """Why the run is given up after ``deaths`` deaths in a row, the newest ``last``."""
    crashed = view.obs.crashed.get(last.job_id)
    code = f", exit {last.exit_code}" if last.exit_code is not None else ""
    how = f"crashed on {crashed}" if crashed else f"ended {last.state}{code}"
    return (f"The kernel's job {_doing(run)} died {deaths} times in a row without the run "
            f"moving on (the last: job {last.job_id}, {how}; its stderr: "
            f"runs/{run.run_id}/jobs/{last.name}/stderr). The run is given up after "
            f"{deaths - 1} tries again rather than tried for ever.")
