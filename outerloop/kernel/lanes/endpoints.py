"""Model endpoints' outage latches: who may start a session on which endpoint.

Each endpoint (``fleet.py``: a named ``[endpoints.NAME]``, or ``default``, the one of
``[harness]``) has its own latch in ``State.endpoints``: down after a session on it was
refused (``source`` ``leg`` or ``judge``) or the tick's probe found it down
(``probe``); up after a probe answered or a leg on it was answered to its end.

While an endpoint is down its runs **wait**, spending nothing: admission starts none
of them, a leg job that finds the latch down starts no session and records an
``endpoint_wait`` (``attempt/endpoint_gate.py``), and a session the API refuses records
one too instead of ending the run. This lane delivers each waiting run's leg again as
a ``retry`` (never a recovery: it counts toward no budget) once the endpoint may be
used. Runs on other endpoints go on.

When may it be used again:

- down by a probe: when a probe answers (``endpoint_up``);
- down by a refusal: not before its cooldown (``harness/outage.py``: 45 minutes after
  an account refusal, 5 after throttling); then, with a probe, when the probe answers;
  without one, one leg at a time goes as the probe (``probing``): its answer lifts the
  latch, its refusal sets it again.

Pure: reads the ``TickView`` and the actions planned before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from outerloop.clock import parse_stamp, shown, stamp
from outerloop.config import Settings
from outerloop.errors import ConfigError
from outerloop.fleet import endpoint_users, seat_of
from outerloop.harness.outage import cooldown_minutes
from outerloop.kernel.actions import Action, RecordEvent, SubmitJob
from outerloop.kernel.lanes.machine import retry_job
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import events as ev
from outerloop.ledger.state import EndpointLatch, RunRecord, State
from outerloop.vocabulary import JobPurpose

PROBE = "probe"
STARTS = frozenset({JobPurpose.CLIMB, JobPurpose.RETRY})
"""The job purposes that start a session now (a wake waits on its run's jobs first)."""


def run_endpoint(settings: Settings, run: RunRecord) -> str | None:
    """The endpoint the run's legs use (None: no model API, or its slot is unset)."""
    try:
        return seat_of(settings, run.target, run.agent).endpoint
    except ConfigError:
        return None


def cooled_at(latch: EndpointLatch) -> datetime:
    """When a refusal's cooldown ends (a probe-set latch has none: it lasts until a
    probe answers)."""
    return parse_stamp(latch.at) + timedelta(minutes=cooldown_minutes(latch.refusal))


def blocked(latch: EndpointLatch | None, now: datetime) -> bool:
    """No session may start on the endpoint: down by a probe, or within a refusal's
    cooldown. What a leg job reads before it starts a session."""
    if latch is None or not latch.down:
        return False
    return latch.source == PROBE or now < cooled_at(latch)


def down_words(name: str, latch: EndpointLatch) -> str:
    why = latch.refusal or "no answer"
    detail = f": {latch.detail}" if latch.detail else ""
    since = shown(parse_stamp(latch.since)) if latch.since else "now"
    return f"endpoint {name} is down since {since} ({why}{detail})"


@dataclass(frozen=True)
class Gate:
    """Which endpoints may take a session this tick, this tick's probes included."""

    view: TickView
    planned: list[Action]

    def latch(self, name: str) -> EndpointLatch | None:
        """The latch as this tick leaves it: the ledger's, then this tick's probe. Within
        a refusal's cooldown the refusal stands whatever the probe says (a list-models
        call may answer while the account has no credit)."""
        latch = self.view.state.endpoints.get(name)
        probed = self.view.obs.endpoints.get(name)
        now = self.view.obs.now
        if probed is None or (latch is not None and latch.down and latch.source != PROBE
                              and blocked(latch, now)):
            return latch
        if probed.up:
            return EndpointLatch(detail=probed.detail)
        since = latch.since if latch is not None and latch.down else stamp(now)
        return EndpointLatch(True, since, stamp(now), PROBE, probed.refusal, probed.detail)

    def why(self, name: str | None) -> str | None:
        """Why a session may not start on ``name`` now, or None."""
        if name is None:
            return None
        latch = self.latch(name)
        if latch is None or not latch.down:
            return None
        if blocked(latch, self.view.obs.now):
            return down_words(name, latch)
        if self.in_flight(name):
            return f"{down_words(name, latch)}; one run probes it now"
        return None

    def in_flight(self, name: str) -> int:
        """Sessions starting or running on ``name``: legs open, start jobs live or
        planned (a probing endpoint takes one at a time)."""
        state, settings = self.view.state, self.view.settings
        count = 0
        for run in state.active_runs():
            if run_endpoint(settings, run) != name:
                continue
            live = [state.jobs[j] for j in run.job_ids if j in state.jobs
                    and not state.jobs[j].terminal and state.jobs[j].purpose in STARTS]
            count += 1 if run.leg_open or live else 0
        for action in self.planned:
            if isinstance(action, SubmitJob) and action.purpose in STARTS and action.run:
                starting = state.runs.get(action.run)
                count += 1 if starting is not None and \
                    run_endpoint(settings, starting) == name else 0
        return count


def _latch_events(view: TickView) -> list[Action]:
    """This tick's probes, recorded when they change the latch: in the tick file of
    each target using the endpoint (a leg job reads its own target's)."""
    users = endpoint_users(view.settings)
    actions: list[Action] = []
    gate = Gate(view, [])
    for name, probed in sorted(view.obs.endpoints.items()):
        before = view.state.endpoints.get(name)
        after = gate.latch(name)
        was_down = before is not None and before.down
        event: ev.EndpointDown | ev.EndpointUp | None = None
        if after is not None and after.down and (not was_down or (
                before is not None and before.source != PROBE and after.source == PROBE)):
            event = ev.EndpointDown(endpoint=name, source=PROBE, refusal=probed.refusal,
                                    detail=probed.detail)
        elif was_down and (after is None or not after.down):
            event = ev.EndpointUp(endpoint=name, detail=probed.detail)
        if event is not None:
            actions.extend(RecordEvent(target=repo, event=event) for repo in users.get(name, []))
    return actions


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    """Record what this tick's probes changed; deliver again each waiting run's leg
    whose endpoint may be used."""
    actions = _latch_events(view)
    if view.obs.compute_error:
        return actions
    for run in sorted(view.state.active_runs(), key=lambda r: r.queued_at):
        wait = view.state.endpoint_wait(run)
        last = view.state.latest_leg(run)
        if wait is None or last is None or not last.terminal:
            continue
        gate = Gate(view, [*planned, *actions])
        if gate.why(wait.endpoint) is None or _review_waited_out(view, wait):
            actions.append(retry_job(view, run))
    return actions


def _review_waited_out(view: TickView, wait: ev.EndpointWait) -> bool:
    """A review waited ``[review] wait_hours``: its panel runs now, and degrades."""
    if not wait.review or not wait.since:
        return False
    waited = (view.obs.now - parse_stamp(wait.since)).total_seconds() / 3600
    return waited >= view.settings.review.wait_hours


def waiting_runs(state: State, settings: Settings, name: str) -> list[str]:
    """The runs waiting on endpoint ``name``: a recorded wait in force, or queued on
    it while it is down."""
    latch = state.endpoints.get(name)
    down = latch is not None and latch.down
    out = []
    for run in state.active_runs():
        wait = state.endpoint_wait(run)
        recorded = wait is not None and wait.endpoint == name
        queued = down and not run.admitted and run_endpoint(settings, run) == name
        if recorded or queued:
            out.append(run.run_id)
    return out


def report(state: State, settings: Settings, now: datetime) -> dict[str, dict[str, object]]:
    """Each endpoint's state and the runs waiting on it (``status``, the tick's notes):
    ``up``, ``down`` (no session may start), ``probing`` (down, cooled: one leg goes)."""
    out: dict[str, dict[str, object]] = {}
    for name in sorted(set(endpoint_users(settings)) | set(state.endpoints)):
        latch = state.endpoints.get(name)
        down = latch is not None and latch.down
        status = "down" if blocked(latch, now) else "probing" if down else "up"
        row: dict[str, object] = {"state": status, "waiting": waiting_runs(state, settings,
                                                                            name)}
        if latch is not None and down:
            row.update(since=latch.since, source=latch.source, refusal=latch.refusal,
                       detail=latch.detail)
            if latch.source != PROBE:
                row["cooldown_until"] = stamp(cooled_at(latch))
        out[name] = row
    return out


def tick_notes(view: TickView) -> list[str]:
    """One line per endpoint that is down, with the runs waiting on it."""
    notes = []
    for name, row in report(view.state, view.settings, view.obs.now).items():
        latch = view.state.endpoints.get(name)
        if row["state"] == "up" or latch is None:
            continue
        waiting = row["waiting"]
        assert isinstance(waiting, list)
        runs = f"; {len(waiting)} run(s) wait on it: {', '.join(waiting)}" if waiting else ""
        notes.append(f"{down_words(name, latch)}{runs}")
    return notes
