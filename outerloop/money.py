"""Money budgets: the model cost (USD) a run, a target's week and the home's week may
spend. Pure functions of the folded ``State``, the effective limits and the settings.

- A leg's cost is what its harness reported (``leg_ended.cost_usd``), charged to its run
  and to its target's UTC day when the leg ends.
- **Per run**: ``budgets.usd_per_run`` in the contract, lowered by the operator's
  ``[limits] usd_per_run`` (None on both: no cap).
- **Per target and week**: ``usd_per_run x runs_per_week`` in the last 7 days (UTC days,
  today included), lowered by ``[limits] usd_per_week`` (the GPU-hour design's rule).
- **Per home and week**: ``[limits] usd_per_week_home``, every target together.

A leg's cost is known only once it ended, so a leg is started only when what is spent
plus **the leg's estimate** fits every cap: the estimate is the run's costliest leg so
far, and at least ``[limits] usd_leg_estimate`` (0 by default: a run's first leg is
estimated at 0 unless the operator says otherwise). Nothing may be left over either: a
cap already reached starts no leg, whatever the estimate. A leg that cannot start ends
its run ``budget-exhausted`` with the arithmetic (``refusal``); admission starts no run,
and an issue waits, while the target's or the home's week is spent (``week_refusal``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from outerloop.clock import week_first_day
from outerloop.config import Settings
from outerloop.ledger.state import RunRecord, State
from outerloop.limits import EffectiveLimits, smaller
from outerloop.numfmt import format_usd


@dataclass(frozen=True)
class MoneyCaps:
    """The money caps a target's runs get (None: no cap)."""

    run: float | None
    week: float | None
    """The target's, per 7 days."""
    home_week: float | None
    """The home's, per 7 days, every target together."""
    leg_estimate: float
    """The least a leg is assumed to cost before it starts."""


def money_caps(limits: EffectiveLimits, settings: Settings) -> MoneyCaps:
    """The caps from the clamped contract and the operator's ``[limits]``."""
    run = limits.usd_per_run
    week = None if run is None else run * limits.runs_per_week
    op = settings.limits
    return MoneyCaps(run=run, week=smaller(week, op.usd_per_week),
                     home_week=op.usd_per_week_home, leg_estimate=op.usd_leg_estimate)


@dataclass(frozen=True)
class Spend:
    """What is spent against one cap, and the cap."""

    what: str
    """Whose cap, in words: ``the run's``, ``the target's 7-day``, ``the home's 7-day``."""
    setting: str
    """The setting that sets it (named in the refusal)."""
    spent: float
    cap: float

    def refusal(self, estimate: float, basis: str) -> str | None:
        """Why a leg estimated at ``estimate`` may not start against this cap, with the
        arithmetic; None when it fits."""
        if self.spent >= self.cap:
            return (f"{self.what} model budget is spent: {format_usd(self.spent)} of "
                    f"{format_usd(self.cap)} ({self.setting})")
        if self.spent + estimate > self.cap:
            return (f"the next leg could pass {self.what} model budget: "
                    f"{format_usd(self.spent)} spent + {format_usd(estimate)} estimated for "
                    f"the leg ({basis}) = {format_usd(self.spent + estimate)} > "
                    f"{format_usd(self.cap)} ({self.setting})")
        return None


def leg_estimate(run: RunRecord, caps: MoneyCaps) -> tuple[float, str]:
    """(what the run's next leg is assumed to cost, why that figure)."""
    if run.max_leg_cost_usd > caps.leg_estimate:
        return run.max_leg_cost_usd, "the run's costliest leg so far"
    return caps.leg_estimate, "[limits] usd_leg_estimate"


def week_spends(state: State, target: str, caps: MoneyCaps, now: datetime) -> list[Spend]:
    """The target's and the home's 7-day spend against their caps (those set)."""
    first = week_first_day(now)
    out = []
    if caps.week is not None:
        out.append(Spend("the target's 7-day", "usd_per_week, or usd_per_run x runs_per_week",
                         state.usd_since(target, first), caps.week))
    if caps.home_week is not None:
        out.append(Spend("the home's 7-day", "[limits] usd_per_week_home",
                         state.usd_since(None, first), caps.home_week))
    return out


def refusal(state: State, run: RunRecord, caps: MoneyCaps, now: datetime) -> str | None:
    """Why ``run``'s next leg may not start (the first cap it would pass, with the
    arithmetic), or None."""
    estimate, basis = leg_estimate(run, caps)
    spends = week_spends(state, run.target, caps, now)
    if caps.run is not None:
        spent = round(run.cost_usd, 6)  # a sum of floats: compared to the cent, not 1e-16
        spends.insert(0, Spend("the run's", "usd_per_run", spent, caps.run))
    for spend in spends:
        problem = spend.refusal(estimate, basis)
        if problem is not None:
            return problem
    return None


def week_refusal(state: State, target: str, caps: MoneyCaps, now: datetime) -> str | None:
    """Why no run of ``target`` may start for its week's money (or the home's), with the
    arithmetic; None when a first leg at ``usd_leg_estimate`` fits."""
    for spend in week_spends(state, target, caps, now):
        problem = spend.refusal(caps.leg_estimate, "[limits] usd_leg_estimate")
        if problem is not None:
            return problem
    return None
