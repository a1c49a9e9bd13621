"""The folded ``State``: every record the fold keeps, in one value (``fold.py`` builds it).

One of the ledger's four doors (``ledger/book.py`` says which): code outside
``ledger/`` takes ``State`` and the records it holds (``RunRecord``, ``JobRecord``, the
run's state, ending and park words...) from here, never from ``records.py``.

Apart from ``records.py`` because it holds the runs as ``runs.Runs``, which is built
on ``RunRecord``: records -> runs -> state, no cycle."""

from __future__ import annotations

from dataclasses import dataclass, field

from outerloop.ledger import events as ev
from outerloop.ledger.events import EffectResult
from outerloop.ledger.records import OPERATOR_MESSAGE as OPERATOR_MESSAGE
from outerloop.ledger.records import OPERATOR_PREFIX as OPERATOR_PREFIX
from outerloop.ledger.records import PANEL_AUTHOR as PANEL_AUTHOR
from outerloop.ledger.records import ContractHealth as ContractHealth
from outerloop.ledger.records import Ending as Ending
from outerloop.ledger.records import EndpointLatch as EndpointLatch
from outerloop.ledger.records import FeedbackEntry as FeedbackEntry
from outerloop.ledger.records import Head as Head
from outerloop.ledger.records import JobRecord as JobRecord
from outerloop.ledger.records import LineRecord as LineRecord
from outerloop.ledger.records import ParkReason as ParkReason
from outerloop.ledger.records import PendingIntent as PendingIntent
from outerloop.ledger.records import Published as Published
from outerloop.ledger.records import RunRecord as RunRecord
from outerloop.ledger.records import RunState as RunState
from outerloop.ledger.records import StepFailures as StepFailures
from outerloop.ledger.runs import Runs
from outerloop.vocabulary import LEG_PURPOSES, JobState


@dataclass(slots=True)
class State:
    runs: Runs = field(default_factory=lambda: _runs({}))
    """Every run, settled ones as rows of the history index (``ledger/runs.py``); a
    plain dict given here is wrapped."""
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    intents: dict[tuple[str, str], PendingIntent] = field(default_factory=dict)
    done_keys: dict[str, EffectResult] = field(default_factory=dict)
    leaders: dict[tuple[str, str], ev.Leader] = field(default_factory=dict)
    """(target, benchmark) -> the latest ``leader`` event: the benchmark's best."""
    notes: list[tuple[str, str, str]] = field(default_factory=list)
    events: int = 0
    fresh: int = 0
    """Events folded by the latest rebuild (0: nothing new since the cache)."""
    malformed: int = 0
    damaged: list[tuple[str, int, str]] = field(default_factory=list)
    """Unreadable or missing ledger lines: (file under ``ledger/``, line number, what)."""
    damaged_new: list[tuple[str, int, str]] = field(default_factory=list)
    """Those the latest rebuild found (the tick prints them in its notes)."""
    unknown: int = 0
    last_at: str = ""
    done_by_run: dict[str, list[str]] = field(default_factory=dict)
    """Which done keys belong to which run, so a settled run's keys can be dropped."""
    failures: dict[str, StepFailures] = field(default_factory=dict)
    """Each effect key's definite failures since it was last done (``failed`` events;
    ``retry_rule``); dropped when it is done, or its run settles."""
    early_ends: dict[str, tuple[JobState, int | None, int, str, int, dict[int, int]]] = field(
        default_factory=dict)
    """Job ends seen before the job's registration (clock skew between hosts)."""
    contracts: dict[str, ContractHealth] = field(default_factory=dict)
    """Per target: its contract's health and alarm (``lanes/alarms.py``)."""
    clock: int = 0
    """The highest logical clock folded: writers stamp above it (``LogicalClock``)."""
    orphans: dict[str, list[tuple[str, ev.RunEvent]]] = field(default_factory=dict)
    """Run events folded before their run's ``run_queued`` (file, event), replayed then."""
    waiting: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    """(target, issue) -> (why it waits, since when): issues intake would take but
    cannot start yet; cleared when the issue is claimed."""
    combined: dict[tuple[str, int, int], list[str]] = field(default_factory=dict)
    """(target, older PR, newer PR) -> the files both change (empty: a ``combine`` issue
    was opened): pairs the integrator looked at, never again (``CombineProposed``)."""
    superseded: dict[tuple[str, int], int] = field(default_factory=dict)
    """(target, PR) -> the merged combination's PR that supersedes it."""
    widened: dict[tuple[str, int], int] = field(default_factory=dict)
    """(target, issue) -> the width a maintainer's ``/outerloop widen N`` asked for, the
    latest on record (``IssueWidened``)."""
    gpu_budgets: dict[str, ev.GpuBudget] = field(default_factory=dict)
    """Per target: the latest ``gpu_budget`` (run_hours, week_hours, max_concurrent_gpus)."""
    gpu_days: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per target, per UTC day (``YYYY-MM-DD``) a job ended: GPU-seconds charged."""
    cost_days: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per target, per UTC day a leg ended: the model cost its legs recorded, in
    micro-dollars (integers: any order of folding gives the same sums)."""
    published: dict[str, Published] = field(default_factory=dict)
    """Per target: its research-log's latest record (``lanes/record.py``)."""
    ledger_damage: list[str] = field(default_factory=list)
    """What the latest rebuild found damaged and what it did (``ledger/integrity.py``)."""
    line_resets: dict[tuple[str, str], int] = field(default_factory=dict)
    """(target, agent) -> how many times the operator started the slot's research line
    afresh (``line_reset``; ``line_paths.line_branch``)."""
    endpoints: dict[str, EndpointLatch] = field(default_factory=dict)
    """Per model endpoint: its outage latch (``endpoint_down``/``endpoint_up``, and legs
    on it that were not refused)."""
    heads: dict[str, Head] = field(default_factory=dict)
    """Set by each rebuild: where the verified chain of each file it read, and of every
    target's tick file, stands (the tick attests them at its commit:
    ``ledger/attest.py``)."""
    frozen: dict[str, str] = field(default_factory=dict)
    """Target directory (``owner__name``) -> why: a damaged ledger file of the target
    could not be restored; nothing of the target is acted on until it is whole."""

    def frozen_target(self, repo: str) -> bool:
        return repo.replace("/", "__") in self.frozen

    def __post_init__(self) -> None:
        if isinstance(self.runs, dict):
            self.runs = _runs(self.runs)

    def gpu_hours_since(self, target: str, day: str) -> float:
        """GPU-hours charged to ``target`` on ``day`` (``YYYY-MM-DD``) and after."""
        days = self.gpu_days.get(target, {})
        return sum(s for d, s in days.items() if d >= day) / 3600

    def usd_since(self, target: str | None, day: str) -> float:
        """Model cost (USD) charged to ``target`` (None: every target) on ``day`` and
        after."""
        targets = [target] if target is not None else list(self.cost_days)
        return sum(micro for t in targets for d, micro in self.cost_days.get(t, {}).items()
                   if d >= day) / 1_000_000

    def live_jobs(self) -> list[JobRecord]:
        return [j for j in self.jobs.values() if not j.terminal]

    def active_runs(self, target: str | None = None) -> list[RunRecord]:
        return [r for r in self.runs.live()
                if not r.ended and (target is None or r.target == target)]

    def runs_of_issue(self, target: str, issue: int) -> list[RunRecord]:
        return self.runs.of_issue(target, issue)

    def latest_leg(self, run: RunRecord) -> JobRecord | None:
        """The run's newest leg job (climb, wake, recovery or retry), by registration."""
        legs = [self.jobs[j] for j in run.job_ids
                if j in self.jobs and self.jobs[j].purpose in LEG_PURPOSES]
        return max(legs, key=lambda j: (j.submitted_lc, j.submitted_at)) if legs else None

    def endpoint_wait(self, run: RunRecord) -> ev.EndpointWait | None:
        """The run's wait on a model endpoint while it is in force: recorded for the
        run's latest leg job (a retry registered since ends it)."""
        wait = run.endpoint_wait
        if wait is None or run.ended:
            return None
        latest = self.latest_leg(run)
        return wait if latest is not None and latest.job_id == wait.job_id else None

    def machine_wait(self, run: RunRecord) -> ev.InfraWait | None:
        """The run's wait on the machine (a full disk or quota) while it is in force:
        recorded for the run's latest leg job (a retry registered since ends it)."""
        wait = run.infra_wait
        if wait is None or run.ended:
            return None
        latest = self.latest_leg(run)
        return wait if latest is not None and latest.job_id == wait.job_id else None


def _runs(runs: dict[str, RunRecord]) -> Runs:
    return Runs(runs)
