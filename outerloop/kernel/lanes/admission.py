"""Admission: start queued runs within budgets.

A queued run starts (its workspace is prepared at the target's current default-branch
head, and its climb job submitted) while its target need not wait (``lanes/waiting.py``,
the rule intake applies too: fewer admitted, live runs than ``max_active_attempts``,
fewer than ``runs_per_week`` runs started in the last 7 days, its GPU-hours and model
cost of the last 7 days not spent, its dependency cache warm), at most
``max_new_runs_per_tick`` runs per tick in all. ``HOLD`` starts
none; a run whose model endpoint is down waits while runs on other endpoints start
(``lanes/endpoints.py``).

Before its workspace, the run's share of its target's false-credit budget is fixed
(``_alpha_event``: a ``run_alpha`` in the target's tick file, written before anything
of the run can measure; never again once on record, so a retried start keeps it).

The climb job waits for its workspace (``SubmitJob.after``): a workspace that could not
be prepared leaves the run queued, and it is started again after a backoff, its issue
told once (``lanes/starting.py``); such a failure never costs the issue a claim.
"""

from __future__ import annotations

from collections.abc import Collection

from outerloop.budgets import week_budget
from outerloop.errors import ConfigError
from outerloop.fleet import seat_of
from outerloop.kernel.actions import Action, RecordEvent, SubmitJob
from outerloop.kernel.lanes import lines, starting
from outerloop.kernel.lanes.alpha_shares import AlphaShares
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.endpoints import Gate
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.lanes.waiting import QueuedRun, queued_runs, target_wait
from outerloop.ledger import events as ev
from outerloop.limits import EffectiveLimits, target_limits
from outerloop.money import money_caps
from outerloop.run.jobs import attempt_spec, job_name
from outerloop.vocabulary import JobPurpose


def _caps(budget: ev.GpuBudget) -> tuple[float | int | None, ...]:
    return (budget.run_hours, budget.week_hours, budget.max_concurrent_gpus,
            budget.max_active_attempts, budget.run_usd, budget.week_usd)


def _budget_event(view: TickView, repo: str, limits: EffectiveLimits) -> RecordEvent | None:
    """A ``gpu_budget`` event when the target's budgets (GPU-hours, GPUs at once, active
    runs) differ from the recorded."""
    money = money_caps(limits, view.settings)
    budget = ev.GpuBudget(target=repo, run_hours=limits.gpu_hours_per_run,
                          week_hours=week_budget(limits, view.settings),
                          max_concurrent_gpus=limits.max_concurrent_gpus,
                          max_active_attempts=limits.max_active_attempts,
                          run_usd=money.run, week_usd=money.week)
    known = view.state.gpu_budgets.get(repo)
    if known is not None and _caps(known) == _caps(budget):
        return None
    return RecordEvent(target=repo, event=budget)


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    if view.hold or view.environment:
        return actions
    budget = view.settings.limits.max_new_runs_per_tick
    for target in view.settings.targets:
        seen = view.obs.targets.get(target.repo)
        if seen is None or seen.error or seen.contract is None or seen.base_sha is None:
            continue
        limits = target_limits(seen.contract, view.settings)
        recorded = _budget_event(view, target.repo, limits)
        if recorded is not None:
            actions.append(recorded)
        if target_wait(view, target.repo, limits) is not None:
            continue
        actions.extend(_delay_comments(view, target.repo))
        started = 0
        shares = AlphaShares(view.state.runs, target.repo, seen.contract)
        for row in queued_runs(view, planned, target.repo):
            if budget <= 0 or target_wait(view, target.repo, limits, ahead=started):
                break
            run_id = row.run
            record = view.state.runs.get(run_id)
            if record is not None and not starting.may_start(record, view.obs.now):
                continue  # its last start failed: it waits out the backoff
            if Gate(view, [*planned, *actions]).why(_endpoint_of(view, row)) is not None:
                continue  # its model endpoint is down: it waits, others go on
            workspace = lines.workspace_of(view, target.repo, row, seen.contract, seen.base_sha)
            if workspace is None:
                continue  # the slot's last hand-over is not on its line yet
            if record is None or record.alpha_fixed is None:
                fixed = shares.fix(row.benchmark)
                if fixed is not None:
                    actions.append(RecordEvent(target=target.repo, run=run_id, event=fixed))
            actions.append(workspace)
            spec = attempt_spec(view.settings, run_id, "start", job_name(run_id, "climb"),
                                limits.attempt_job_minutes)
            actions.append(SubmitJob(target=target.repo, run=run_id, purpose=JobPurpose.CLIMB,
                                     spec=spec))
            budget -= 1
            started += 1
    return actions


def _endpoint_of(view: TickView, row: QueuedRun) -> str | None:
    try:
        return seat_of(view.settings, row.target, row.agent).endpoint
    except ConfigError:
        return None


def _delay_comments(view: TickView, repo: str) -> list[Action]:
    """The issue of each queued run whose start failed is told so, once."""
    posts: list[Action] = []
    for run in view.state.active_runs(repo):
        if run.admitted or not run.start_failures:
            continue
        post = starting.delay_comment(run, starting.public_reason(run.start_error))
        if post is not None and step_due(view, post):
            posts.append(post)
    return posts


def why_waiting(view: TickView, planned: list[Action],
                started: Collection[str] | None = None) -> dict[str, str]:
    """For each queued run this tick did not start: why (what ``status`` shows).
    ``started``: the runs whose climb job was submitted (default: those planned)."""
    if started is None:
        started = {a.run for a in planned if isinstance(a, SubmitJob)
                   and a.purpose == JobPurpose.CLIMB and a.run is not None}
    out: dict[str, str] = {}
    for row in _queued_all(view, planned):
        run_id, repo = row.run, row.target
        if run_id in started:
            continue
        record = view.state.runs.get(run_id)
        if record is not None and record.start_failures:
            out[run_id] = starting.waiting_words(
                record.start_failures, record.start_failed_since, record.start_failed_at,
                record.start_error, view.obs.now)
            continue
        out[run_id] = _target_wait(view, repo) or Gate(view, planned).why(
            _endpoint_of(view, row)) or (
            "HOLD exists: no new runs" if view.hold else
            f"max_new_runs_per_tick ({view.settings.limits.max_new_runs_per_tick}) reached "
            f"this tick, or an older queued run goes first")
    return out


def _queued_all(view: TickView, planned: list[Action]) -> list[QueuedRun]:
    return [row for target in view.settings.targets
            for row in queued_runs(view, planned, target.repo)]


def _target_wait(view: TickView, repo: str) -> str | None:
    seen = view.obs.targets.get(repo)
    if seen is None or seen.error:
        return f"the forge could not be read ({seen.error if seen else 'not observed'})"
    if seen.contract is None:
        return f"the contract does not load ({seen.contract_error})"
    wait = target_wait(view, repo, target_limits(seen.contract, view.settings))
    return None if wait is None else wait.reason
