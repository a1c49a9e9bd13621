"""Why a target must wait: the one rule that decides whether a run of it may start now.

Intake asks it before claiming an issue (would a run queued now start?) and admission
before starting each queued run, and ``status`` shows its words for a queued run, so
intake never claims an issue that admission would make wait, and every wait is said in
the same words.

A target waits, first reason first:

- ``environment``: the operator's environment is broken (the tick's own check);
- ``dependencies``: its dependency cache is not warm (``lanes/deps.py``);
- ``active-cap``: ``max_active_attempts`` runs are admitted and live, counting the runs
  that stand ahead of this one (``ahead``);
- ``week-budget``: ``runs_per_week`` runs were started in the last 7 days (by queue time),
  counting those ahead too;
- ``gpu-week``: the target's GPU-hours of the last 7 days are spent (``budgets``);
- ``money-week``: its model cost of the last 7 days (or the home's) is spent
  (``money``).

``ahead`` is what the asker knows and the ledger does not hold yet: intake's issue
stands behind every run already queued (those start first); admission's next queued
run stands behind the runs it started earlier in the same tick.
"""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.budgets import target_week
from outerloop.clock import WEEK, stamp
from outerloop.kernel.actions import Action, RecordEvent
from outerloop.kernel.lanes import deps
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import events as ev
from outerloop.limits import EffectiveLimits
from outerloop.money import money_caps, week_refusal

QUEUED_THIS_TICK = "~"
"""The queue time of a run intake queued earlier in this same tick: after every stamp."""


@dataclass(frozen=True, slots=True)
class Wait:
    """Why a target's next run may not start now."""

    kind: str
    """Short and stable (it keys the issue's one wait comment): ``environment``,
    ``dependencies``, ``active-cap``, ``week-budget``, ``gpu-week``, ``money-week``."""
    reason: str
    """What holds the run, with the numbers (``status``, the board, the issue)."""
    until: str
    """When it frees, in words that follow "starts" (the issue's comment)."""


@dataclass(frozen=True, slots=True)
class QueuedRun:
    """A run waiting to start, as admission orders them."""

    run: str
    agent: str
    target: str
    at: str
    """When it was queued (``QUEUED_THIS_TICK`` for one queued in this tick)."""
    benchmark: str = ""
    combines: tuple[int, ...] = ()
    """The pull requests it combines (``lanes/integrate.py``)."""


def queued_runs(view: TickView, planned: list[Action], repo: str) -> list[QueuedRun]:
    """Runs queued in the ledger or by intake earlier in this same tick, oldest first."""
    rows = [QueuedRun(run=r.run_id, agent=r.agent, target=repo, at=r.queued_at,
                      benchmark=r.benchmark, combines=tuple(r.combines))
            for r in view.state.active_runs(repo) if not r.admitted]
    for action in planned:
        if isinstance(action, RecordEvent) and isinstance(action.event, ev.RunQueued) \
                and action.target == repo:
            rows.append(QueuedRun(run=str(action.run), agent=action.event.agent,
                                  target=repo, at=QUEUED_THIS_TICK,
                                  benchmark=action.event.benchmark,
                                  combines=tuple(action.event.combines)))
    return sorted(rows, key=lambda row: row.at)


def target_wait(view: TickView, repo: str, limits: EffectiveLimits, *,
                ahead: int = 0) -> Wait | None:
    """Why a run of ``repo`` may not start now, behind ``ahead`` runs that start first
    (see the module doc); None when it may."""
    if view.environment:  # the details (paths) are the operator's: in the tick's notes
        return Wait("environment", "the operator's environment is broken (a command every "
                    "sandboxed process needs cannot start there; `outerloop doctor` names "
                    "it and the fix)", "once the operator fixes it")
    cache = deps.waits(view, repo)
    if cache is not None:
        return Wait("dependencies", cache, "once it is warm")
    week_ago = stamp(view.obs.now - WEEK)
    runs = [r for r in view.state.runs.live() if r.target == repo]  # settled: ended
    live = sum(1 for r in runs if r.admitted and not r.ended) + ahead
    cap = limits.max_active_attempts
    if live >= cap:
        return Wait("active-cap", f"the target already runs its maximum of {cap} run(s) at "
                    f"once (max_active_attempts)", "when one of them ends")
    started = sum(1 for r in runs if r.admitted and r.queued_at >= week_ago) + ahead + \
        view.state.runs.admitted_since(week_ago, repo)  # the settled ones: counted, not built
    if started >= limits.runs_per_week:
        return Wait("week-budget", f"the target's budget of {limits.runs_per_week} run(s) per "
                    f"week is spent ({started} in the last 7 days, runs_per_week)",
                    "when the oldest of them is 7 days old")
    used, budget = target_week(view.state, repo, limits, view.settings, view.obs.now)
    if used > 0 and used >= budget:
        return Wait("gpu-week", f"the week's GPU-hours are spent ({used:.2f} of {budget:g} "
                    f"in the last 7 days)", "when the 7-day window frees enough (GPU time "
                    "is counted per UTC day)")
    spent = week_refusal(view.state, repo, money_caps(limits, view.settings), view.obs.now)
    if spent is not None:
        return Wait("money-week", spent, "when the 7-day window frees enough (spend is "
                    "counted per UTC day)")
    return None
