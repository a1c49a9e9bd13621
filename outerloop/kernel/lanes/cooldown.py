"""The outage cooldown: after the model API refused a session, start no new one for a while.

A refusal (``run_ended`` with ``by="outage"``) pauses session starts for the author
role: 45 minutes after an account refusal (auth, credit), 5 minutes after throttling
(rate limit, overload); see ``harness/outage.py``. When the pause is over, admission
starts one run, the probe, and no other while that probe has not finished its first
leg, so one run per cooldown re-probes the API instead of every queued run burning a
session on a refusal. Probing applies only while the latest outage is recent
(``PROBE_WINDOW``); an old outage no longer restricts anything. Pure: reads the
folded state only.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from outerloop.clock import parse_stamp
from outerloop.harness.outage import cooldown_minutes
from outerloop.ledger.state import RunRecord, State

PROBE_WINDOW = timedelta(hours=24)


def last_outage(state: State) -> RunRecord | None:
    """The run that most recently ended on a model outage, if any."""
    ended = [r for r in state.runs.select("outage") if r.outage and r.ended_at]
    return max(ended, key=lambda r: str(r.ended_at)) if ended else None


def paused_until(state: State) -> datetime | None:
    """When the cooldown of the latest outage ends (None: there was no outage)."""
    run = last_outage(state)
    if run is None or run.ended_at is None:
        return None
    return parse_stamp(run.ended_at) + timedelta(minutes=cooldown_minutes(run.refusal))


def _probing(run: RunRecord) -> bool:
    """An admitted, live run that has not yet finished its first leg."""
    return run.admitted and not run.ended and (run.legs == 0 or (run.legs == 1 and run.leg_open))


def admission_allowance(state: State, now: datetime, budget: int) -> int:
    """How many new runs admission may start this tick, given the outage history.

    0 during a cooldown, or while the post-cooldown probe is still in its first leg;
    at most 1 while the latest outage is recent; ``budget`` otherwise."""
    until = paused_until(state)
    if until is None:
        return budget
    if now < until:
        return 0
    if now - until > PROBE_WINDOW:
        return budget
    if any(_probing(r) for r in state.runs.live()):  # a settled run has ended
        return 0
    return min(budget, 1)
