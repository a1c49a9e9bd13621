"""A run as its own job sees it: the partial fold, paths, contract, limits, and an
executor writing the run's own ledger file.

Run jobs (climb and wake) are the only writers of ``runs/<run_id>.jsonl``; the run's
lease (one job of a run at a time: each wake waits on the jobs before it) keeps it so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import msgspec

from outerloop import clock
from outerloop.budgets import GpuHoursLeft, run_budget
from outerloop.compute.base import JobObservation, JobSpec
from outerloop.config import Settings
from outerloop.contract import CONTRACT_FILE, Benchmark, Contract, load_contract_text
from outerloop.errors import DeploymentError, NotFound, OuterloopError
from outerloop.kernel.actions import SubmitJob
from outerloop.kernel.executor import Effects, Executor, maybe_crash
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, LogicalClock, rebuild, run_file, run_files
from outerloop.ledger.state import RunRecord, State
from outerloop.limits import BenchmarkLimits, EffectiveLimits, target_limits
from outerloop.run.paths import RunPaths
from outerloop.run.workspace import read_at, read_bytes_at
from outerloop.text import scrubbed
from outerloop.vocabulary import GPU_PURPOSES, JobPurpose

SETTLE_WAITS_S = (0.0, 2.0, 5.0, 10.0, 20.0)
"""How long a run's job looks for a job whose submit had an unknown outcome (sbatch
timed out) before leaving it to its next leg: five lookups over 37 s."""


@dataclass
class RunContext:
    settings: Settings
    state: State
    run: RunRecord
    paths: RunPaths
    writer: LedgerWriter
    executor: Executor
    contract: Contract
    benchmark: Benchmark
    limits: EffectiveLimits
    submitted: dict[str, str] = field(default_factory=dict)
    """Job ids of the submits this process settled (key -> id), before any refresh."""
    unsettled: set[str] = field(default_factory=set)
    """Keys of this process's submits whose outcome is still unknown."""
    refused: str | None = None
    """The last ``submit``'s clear refusal (the scheduler's words), None when it was
    submitted, is unknown, or waits."""

    @classmethod
    def load(cls, settings: Settings, run_id: str) -> RunContext:
        target = _target_of(settings, run_id)
        state = rebuild(settings.home, files=run_files(settings.home, target, run_id))
        run = state.runs.get(run_id)
        if run is None:
            raise NotFound(f"run {run_id} is not in the ledger; fix: check `outerloop status`")
        if run.base_sha is None or run.branch is None:
            raise OuterloopError(f"run {run_id} has no workspace yet (admission not done)")
        paths = RunPaths.of(settings.home, run_id)
        text = read_at(paths, run.base_sha, CONTRACT_FILE)
        if text is None:
            raise OuterloopError(f"{CONTRACT_FILE} is missing at base {run.base_sha[:12]}")
        contract = load_contract_text(text, f"{run.target}@{run.base_sha[:12]}")
        benchmark = contract.benchmark(run.benchmark)
        if benchmark is None:
            raise OuterloopError(f"benchmark {run.benchmark} is not in the base contract")
        writer = LedgerWriter(run_file(settings.home, run.target, run_id),
                              LogicalClock(state.clock))
        executor = Executor(Effects(settings), lambda _target: writer)
        return cls(settings, state, run, paths, writer, executor, contract, benchmark,
                   target_limits(contract, settings))

    def refresh(self) -> None:
        """Re-fold after appending, so decisions see what was just recorded."""
        files = run_files(self.settings.home, self.run.target, self.run.run_id)
        self.state = rebuild(self.settings.home, files=files)
        self.run = self.state.runs[self.run.run_id]
        self.writer.clock.observe(self.state.clock)

    def append(self, event: ev.BaseEvent) -> None:
        """Append an event of this run; every known secret value is redacted first (job
        output and agent text reach events: nothing secret is ever recorded). Tests may
        crash the job right after it (``CRASH_AT``: ``after-event:<kind>``)."""
        self.writer.append(scrubbed(msgspec.structs.replace(event, run=self.run.run_id),
                                    self.executor.effects.known_secrets()))
        maybe_crash(self.settings.home, f"after-event:{event.kind}")

    def submit(self, spec: JobSpec, purpose: JobPurpose, launch: str | None = None) -> str | None:
        """Submit once: the job id, or None when the job could not be submitted.

        A job whose intent is done (in the ledger or earlier in this process) is not
        submitted again; one whose intent is pending is looked up by name first. A
        submit with an unknown outcome (sbatch timed out: Slurm may have created the
        job) is looked up by name for ``SETTLE_WAITS_S``, never performed again here:
        still not found, it stays pending (None now) and the run's next leg reconciles
        it, by name first, before deciding anything."""
        action = SubmitJob(target=self.run.target, run=self.run.run_id, purpose=purpose,
                           launch=launch, spec=spec)
        self.refused = None
        done = self.state.done_keys.get(action.key)
        if done is not None and done.job_id is not None:
            return done.job_id
        if action.key in self.submitted:
            return self.submitted[action.key]
        if action.key in self.unsettled:
            outcome = self.executor.settle(action, SETTLE_WAITS_S)
        else:
            pending = next((p for p in self.state.intents.values() if p.key == action.key
                            and p.file.endswith(f"/{self.run.run_id}.jsonl")), None)
            outcome = self.executor.reconcile(pending) if pending is not None \
                else self.executor.run(action)
            if outcome.unknown:
                outcome = self.executor.settle(action, SETTLE_WAITS_S)
        if outcome.unknown:
            self.unsettled.add(action.key)
        elif not outcome.ok and not outcome.waited:
            self.refused = outcome.error or "refused, without a message"
        if not outcome.ok or outcome.result.job_id is None:
            return None
        self.unsettled.discard(action.key)
        self.submitted[action.key] = outcome.result.job_id
        return outcome.result.job_id

    def knows_job(self, name: str) -> bool:
        """Whether a submit of job ``name`` is on record (done, or its intent pending)
        or was made by this process: the job may exist, and run in what it was given."""
        key = f"job:{name}"
        return key in self.state.done_keys or key in self.submitted \
            or key in self.unsettled or any(p.key == key for p in self.state.intents.values())

    def reconcile(self) -> None:
        mine = [p for p in self.state.intents.values() if p.file.endswith(
            f"/{self.run.run_id}.jsonl")]
        for pending in sorted(mine, key=lambda p: p.at):
            self.executor.reconcile(pending)
        if mine:
            self.refresh()

    @property
    def bench_limits(self) -> BenchmarkLimits:
        return self.limits.for_benchmark(self.benchmark.name)

    def launches_left(self) -> int:
        topup = self.limits.review_topup_launches if self.run.pr_number else 0
        return max(0, self.bench_limits.depth_k + topup - len(self.run.launches))

    def sleeps_left(self) -> int:
        topup = self.limits.review_topup_sleeps if self.run.pr_number else 0
        return max(0, self.bench_limits.sleep_k + topup - self.run.sleeps)

    def observe(self, job_ids: list[str]) -> dict[str, JobObservation]:
        """The scheduler's word on ``job_ids`` now: one query, none for no ids;
        unanswered, nothing."""
        if not job_ids:
            return {}
        try:
            return self.executor.effects.compute().observe(job_ids)
        except OuterloopError:
            return {}

    def gpu_budget(self, seen: Mapping[str, JobObservation] | None = None) -> GpuHoursLeft:
        """The run's GPU-hours used and left, counting its GPU jobs the ledger does
        not yet hold as ended (observed now, or in ``seen`` when the caller observed
        them already; unanswered, they count as nothing used yet)."""
        jobs = [self.state.jobs[j] for j in self.run.job_ids if j in self.state.jobs]
        open_ids = [j.job_id for j in jobs if not j.terminal and j.gpus
                    and j.purpose in GPU_PURPOSES]
        seen = self.observe(open_ids) if seen is None else seen
        unrecorded = sum(seen[j].gpu_seconds for j in open_ids if j in seen)
        return run_budget(self.state, self.run, self.limits, self.settings,
                          clock.now(), unrecorded)

    def max_launch_gpus(self) -> int:
        """GPUs one launch task may ask for: the benchmark's, within the GPU cap."""
        cap = self.limits.max_concurrent_gpus
        gpus = self.bench_limits.gpus
        return gpus if cap is None else min(gpus, cap)

    def deps_site(self) -> Path | None:
        """The target's dependency cache for the lock in the run's **base** tree (never
        the candidate's), None when the contract names no lock. Raises
        ``DeploymentError`` when it is not warm where this job runs: the run waits for
        it (``infra.DEPLOY_EXIT``), never ends of it."""
        needs = self.contract.dependencies
        if needs is None or self.run.base_sha is None:
            return None
        from outerloop.deps import lock, store

        raw = read_bytes_at(self.paths, self.run.base_sha, needs.requirements)
        if raw is None:
            raise DeploymentError(f"the dependency lock {needs.requirements} is not in the "
                                  f"base tree {self.run.base_sha[:12]} of {self.run.target}")
        key = lock.cache_key(raw)
        site = store.site_if_warm(self.settings.home, self.run.target, key)
        if site is None:
            state = store.key_state(self.settings.home, self.run.target, key)
            raise DeploymentError(
                f"the dependency cache of {self.run.target} for {needs.requirements} (key "
                f"{key}) is {state.state} where this job runs, not warm; the tick builds "
                f"it on its host (`outerloop doctor` shows it)")
        return site

    def ruler(self) -> tuple[Decimal | None, Decimal | None, str | None]:
        leader = self.state.leaders.get((self.run.target, self.run.benchmark))
        if leader is None:
            return None, None, None
        base = leader.baseline
        return (Decimal(base) if base else None, Decimal(leader.value), str(leader.run))


def _target_of(settings: Settings, run_id: str) -> str:
    """The target whose ledger holds ``run_id`` (the run file's directory)."""
    from outerloop.ledger.book import LEDGER_DIR, RUNS_DIR

    for target in settings.targets:
        if run_file(settings.home, target.repo, run_id).exists():
            return target.repo
    ledger = settings.home / LEDGER_DIR
    for candidate in ledger.glob(f"*/{RUNS_DIR}/{run_id}.jsonl"):
        return candidate.parent.parent.name.replace("__", "/", 1)
    for target in settings.targets:
        # on top of the tick's cache, which holds every target's runs: the run's own
        # record names its target (one found only in the cache may be another target's;
        # a job started before its tick saved again read that target's tick file and
        # missed its own workspace)
        run = rebuild(settings.home,
                      files=run_files(settings.home, target.repo, run_id)).runs.get(run_id)
        if run is not None:
            return run.target
    raise NotFound(f"run {run_id} is not in the ledger; fix: check `outerloop status`")
