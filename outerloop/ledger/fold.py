"""The fold: one event at a time into ``State``. Pure and deterministic.

Events are folded in ``(lc, at, file, seq)`` order (``lc``: the writers' logical
clock), so whatever a writer had read sorts before what it wrote, whatever the hosts'
wall clocks say. Events no writer could have seen of each other (a tick and a run's job
writing at once) may be read in either order by an incremental fold, so every fact
about them is order-free: the first ``run_ended`` in fold order is the ending, a leg's
cost, a park's jobs or a publication are recorded whether or not the run already
ended, a job's end seen before its registration waits for it, and a run's events seen
before its ``run_queued`` wait for it. An incremental fold therefore agrees with a cold
one.
"""

from __future__ import annotations

import bisect
from typing import Protocol, cast, get_args

import msgspec

from outerloop import effects as eff
from outerloop.change_sketch import exact_part
from outerloop.compute.spec import JobSpec
from outerloop.ledger import cites
from outerloop.ledger import events as ev
from outerloop.ledger.compaction import RECORD_PREFIX
from outerloop.ledger.compaction import compact as compact
from outerloop.ledger.records import (
    ContractHealth,
    Ending,
    EndpointLatch,
    FeedbackEntry,
    JobRecord,
    LineRecord,
    ParkReason,
    PendingIntent,
    Published,
    RunRecord,
    RunState,
    StepFailures,
    base_conflict_feedback,
    revision_feedback,
)
from outerloop.ledger.standing import blocked_why
from outerloop.ledger.state import State
from outerloop.line_paths import line_heads
from outerloop.retry_rule import Cause
from outerloop.text import agent_report_title
from outerloop.vocabulary import SETTLED_VERDICTS, GateVerdict, JobPurpose, JobState

_RUNNING, _PARKED, _ENDED = RunState.RUNNING, RunState.PARKED, RunState.ENDED
_PUBLISH = ParkReason.PUBLISH
_SLEEPS = frozenset({ParkReason.JOBS, ParkReason.EVAL})
"""Parks that spend one of the run's sleeps (a retry's does not)."""
_PARK_REASON = {reason.value: reason for reason in ParkReason}
_ENDING = {ending.value: ending for ending in Ending}
"""The enums bound once for the fold's hot path: on Python 3.11 looking a member up on
its enum costs ~0.1 µs and calling the enum with a value ~1 µs, at 400,000 events."""

MAX_NOTES = 200
MAX_ORPHANS = 10_000
"""Run events waiting for their ``run_queued``, at most (a ledger that lost it)."""


class _Placed(Protocol):
    """What places an event in the fold's order (every event has it)."""

    @property
    def lc(self) -> int: ...
    @property
    def at(self) -> str: ...
    @property
    def seq(self) -> int: ...


def order_of(file: str, event: _Placed) -> tuple[int, str, str, int]:
    """The fold's order: logical clock, then time, file and line."""
    return (event.lc, event.at, file, event.seq)


def _touch(run: RunRecord, at: str) -> None:
    if at > run.updated_at:
        run.updated_at = at


def _failed(state: State, event: ev.Failed, pending: PendingIntent | None) -> None:
    """Count a step's definite failure with its cause (``retry_rule``); a push refused
    on a branch someone else moved is remembered on the run (``RunRecord.moved_heads``),
    so its candidate is published on a fresh branch."""
    action = pending.action if pending is not None else None
    effect = action if isinstance(action, eff.Effect) else None
    run_id = event.run or (effect.run if effect is not None else None)
    cause = Cause.recorded(event.cause)
    known = state.failures.get(event.key)
    kind = effect.kind if effect is not None else ""
    if known is None:
        state.failures[event.key] = StepFailures(
            1, cause, event.error, event.at, event.at, run_id,
            effect.target if effect is not None else "", kind,
            effect is not None and _starts(effect))
    else:
        known.count += 1
        known.cause, known.error, known.last_at = cause, event.error, event.at
        known.kind = kind or known.kind
    run = state.runs.get(run_id) if run_id else None
    if run is not None and isinstance(action, eff.OpenPR) and cause == Cause.MOVED \
            and action.head not in run.moved_heads:
        run.moved_heads.append(action.head)
    line = run.line if run is not None else None
    if line is not None and isinstance(action, eff.PushLine) and cause == Cause.MOVED \
            and action.branch not in line.moved:
        line.moved.append(action.branch)  # the earlier branches' refusals are superseded
        for key in [k for k, f in state.failures.items() if k != event.key
                    and f.run == run_id and f.kind == action.kind]:
            del state.failures[key]


def _on_done(state: State, file: str, event: ev.Done) -> None:
    pending = state.intents.pop((file, event.key), None)
    result = event.result
    state.done_keys[event.key] = result
    state.failures.pop(event.key, None)
    run_id = event.run or _run_of(pending)
    if run_id:
        bisect.insort(state.done_by_run.setdefault(run_id, []), event.key)
    if result.reports is not None or result.summary is not None or result.board is not None:
        _record_published(state, event.key, result,
                          pending.action if pending is not None else None)
    if pending is None:
        return
    action = pending.action
    if isinstance(action, eff.Unreadable):
        return  # an action this version cannot read: its done key is all it leaves
    run = state.runs.get(action.run) if action.run else None
    if isinstance(action, eff.SubmitJob):
        if result.job_id is not None:
            _job_submitted(state, file, event, action, result.job_id, run)
    elif isinstance(action, eff.OpenPR):
        if run is not None and result.number is not None:
            run.pr_number = result.number
            run.pr_head = action.head
            for key in [k for k, f in state.failures.items()
                        if f.run == run.run_id and f.kind == action.kind]:
                del state.failures[key]  # its earlier tries are superseded
            run.published_sha = action.sha
            run.state, run.park_reason = (RunState.PARKED, ParkReason.REVIEW) \
                if not run.ended else (run.state, None)
            run.last_activity_at = max(run.last_activity_at, event.at)
            _touch(run, event.at)
    elif isinstance(action, eff.FetchBase):
        if run is not None and run.publish is not None and run.publish.seal_sha == action.seal:
            run.rebase_to = result.base or action.base
    elif isinstance(action, eff.PrepareWorkspace):
        if run is not None:
            run.base_sha = result.base or action.base
            run.branch = action.branch
            if action.line and result.line_start:
                run.line = LineRecord(branch=action.line, start=result.line_start,
                                      conflicts=list(result.conflicts or []),
                                      head=result.line_start)
    elif isinstance(action, eff.PushLine):
        if run is not None and run.line is not None \
                and action.branch in line_heads(run.line.branch):
            run.line.pushed = action.sha
    elif isinstance(action, eff.PostComment):
        if run is not None:
            _comment_posted(run, event, action)
    elif isinstance(action, eff.CleanWorkspace):
        if run is not None:
            run.cleaned = True
    elif isinstance(action, eff.PruneJobs):
        if run is not None:
            run.pruned = True
    elif isinstance(action, eff.OpenIssue):
        if result.number is not None:
            _health(state, action.target).alarm = result.number
    elif isinstance(action, eff.CloseIssue):
        health = _health(state, action.target)
        if health.alarm == action.number:
            health.alarm = None


def _run_of(pending: PendingIntent | None) -> str | None:
    """The run of a ``done``'s intent: a ``done`` names no run of its own (its intent,
    in the same file, does); one written before issue 27 does."""
    if pending is None or isinstance(pending.action, eff.Unreadable):
        return None
    return pending.action.run


def _record_published(state: State, key: str, result: ev.EffectResult,
                      action: eff.Effect | eff.Unreadable | None) -> None:
    """A research-log record is done: its reports' runs are recorded, and its digests
    are the target's latest (``State.published``). Read from the result (its digests
    from its intent since issue 27: a result written before holds them too), with or
    without its intent, as the record lane always read its done keys."""
    summary, board = result.summary, result.board
    if isinstance(action, eff.PublishRecord):
        target = action.target
        summary, board = summary or action.summary, board or action.board
    else:  # its intent unreadable or lost: the key names the target
        target = key.removeprefix(RECORD_PREFIX).rpartition(":")[0]
    for run_id in result.reports or []:
        recorded = state.runs.get(run_id)
        if recorded is not None:
            recorded.recorded = True
    last = state.published.get(target, Published())
    state.published[target] = Published(summary=summary or last.summary,
                                        board=board or last.board, key=key)


def _job_submitted(state: State, file: str, event: ev.Done, action: eff.SubmitJob,
                   job_id: str, run: RunRecord | None) -> None:
    job = state.jobs[job_id] = JobRecord(
        job_id=job_id, name=action.spec.name, purpose=JobPurpose(action.purpose), run=action.run,
        target=action.target, launch=action.launch, submitted_at=event.at,
        gpus=peak_gpus(action.spec), submitted_lc=event.lc, order=order_of(file, event),
        run_minutes=action.spec.run_minutes,
    )
    early = state.early_ends.pop(job_id, None)
    if early is not None:
        job.state, job.exit_code, job.elapsed_s, job.ended_at = early[:4]
        job.task_elapsed_s = early[5]
        _charge(state, job, early[4], early[3])
    if run is not None:  # in registration order, however the files were read
        bisect.insort(run.job_ids, job_id, key=lambda j: state.jobs[j].order)
        if action.purpose == JobPurpose.CLIMB:
            run.admitted = True
            run.climb_job = job_id
        elif action.purpose == JobPurpose.ARCHIVE:
            run.archive_jobs.append(job_id)
        _touch(run, event.at)


def _starts(action: eff.Effect | eff.Unreadable) -> bool:
    """An effect that starts a run: its workspace, or its climb job's submission."""
    return isinstance(action, eff.PrepareWorkspace) or (
        isinstance(action, eff.SubmitJob) and action.purpose == JobPurpose.CLIMB)


def _comment_posted(run: RunRecord, event: ev.Done, action: eff.PostComment) -> None:
    run.posted.add(action.marker_key)
    if action.marker_kind == "report":
        run.report_posted = True
    if action.marker_kind == "held" and run.state == RunState.PARKED \
            and run.park_reason == ParkReason.PUBLISH:
        # a revision held back from a ready PR: back to review, the review's words
        # waiting for the agent's next wake
        run.state, run.park_reason, run.publish = RunState.PARKED, ParkReason.REVIEW, None
        run.feedback[f"held-{action.marker_key}"] = FeedbackEntry(
            author="outerloop review", text=action.body, at=event.at,
            kind="review of your revision")
        run.last_activity_at = max(run.last_activity_at, event.at)


def peak_gpus(spec: JobSpec) -> int:
    """GPUs a submitted spec holds at most at once: per task x concurrent tasks x nodes."""
    per_task = spec.gpus * spec.nodes
    tasks = spec.array_concurrency or spec.array_size or 1
    return per_task * tasks


def _charge(state: State, job: JobRecord, gpu_seconds: int, at: str) -> None:
    """Charge a job's GPU time to its run and its target's day, once: a second
    ``job_ended`` for the same job charges only what it adds."""
    extra = gpu_seconds - job.gpu_seconds
    if extra <= 0:
        return
    job.gpu_seconds = gpu_seconds
    run = state.runs.get(job.run or "")
    if run is not None:
        run.gpu_seconds += extra
    if job.target:
        days = state.gpu_days.setdefault(job.target, {})
        days[at[:10]] = days.get(at[:10], 0) + extra


def _health(state: State, target: str) -> ContractHealth:
    health = state.contracts.get(target)
    if health is None:
        health = state.contracts[target] = ContractHealth(target)
    return health


_ANSWERED = frozenset({"end_turn", "max_turns"})
"""Stop reasons of a leg the model API answered to its end: its endpoint is up."""
_RUN_EVENTS: frozenset[type] = frozenset(get_args(ev.RunEvent))
"""Events about one run only: the common case, dispatched without the chain below."""


def apply_event(state: State, file: str, event: ev.Event | ev.UnknownEvent) -> None:
    state.events += 1
    if event.at > state.last_at:
        state.last_at = event.at
    if event.lc > state.clock:
        state.clock = event.lc
    run = state.runs.get(event.run) if event.run else None
    if type(event) in _RUN_EVENTS:  # a set lookup: cheaper than isinstance over the union
        about_run = cast(ev.RunEvent, event)
        if run is not None:
            _apply_run_event(run, file, about_run, state)
            if type(event) is ev.LegEnded and event.stop_reason in _ANSWERED:
                latch = state.endpoints.get(run.leg_endpoint)
                if latch is not None and latch.down:
                    _latch(state, run.leg_endpoint, None, event.at)
        elif event.run and sum(len(v) for v in state.orphans.values()) < MAX_ORPHANS:
            state.orphans.setdefault(event.run, []).append((file, about_run))
        return
    if isinstance(event, ev.Intent):
        key = event.effect_key
        state.intents[(file, key)] = PendingIntent(file, key, event.action, event.at)
    elif isinstance(event, ev.Done):
        _on_done(state, file, event)
    elif isinstance(event, ev.Failed):
        pending = state.intents.pop((file, event.key), None)
        _failed(state, event, pending)
        if run is not None and pending is not None and _starts(pending.action):
            run.start_failures += 1
            run.start_failed_since = run.start_failed_since or event.at
            run.start_failed_at, run.start_error = event.at, event.error
    elif isinstance(event, ev.JobEnded):
        job = state.jobs.get(event.job_id)
        if job is not None:
            job.state, job.exit_code = JobState.recorded(event.state), event.exit_code
            job.elapsed_s = event.elapsed_s
            job.task_elapsed_s = dict(event.task_elapsed_s)
            job.ended_at = event.at
            _charge(state, job, event.gpu_seconds, event.at)
        else:
            state.early_ends[event.job_id] = (JobState.recorded(event.state), event.exit_code,
                                              event.elapsed_s,
                                              event.at, event.gpu_seconds,
                                              dict(event.task_elapsed_s))
    elif isinstance(event, ev.CombineProposed):
        older, newer = sorted(event.prs)[:2]
        state.combined[(event.target, older, newer)] = list(event.conflict)
    elif isinstance(event, ev.IssueWidened):
        state.widened[(event.target, event.issue)] = event.width
    elif isinstance(event, ev.IssueWaits):
        state.waiting[(event.target, event.issue)] = (event.reason, event.at)
    elif isinstance(event, ev.RunQueued) and event.run:
        if event.issue is not None:
            state.waiting.pop((event.target, event.issue), None)
        state.runs[event.run] = RunRecord(
            run_id=event.run, target=event.target, benchmark=event.benchmark, agent=event.agent,
            issue=event.issue, issue_title=event.issue_title, hypothesis=event.hypothesis,
            queued_at=event.at, updated_at=event.at, claim_no=event.claim_no, seat=event.seat,
            combines=list(event.combines),
            last_activity_at=event.at, texts=cites.texts_of([event.hypothesis]),
        )
        waiting = state.orphans.pop(event.run, [])
        for early_file, early in sorted(waiting, key=lambda fe: order_of(*fe)):
            _apply_run_event(state.runs[event.run], early_file, early, state)
    elif isinstance(event, ev.Note):
        bisect.insort(state.notes, (event.at, event.level, event.text))
        del state.notes[:-MAX_NOTES]
    elif isinstance(event, ev.Leader):
        state.leaders[(event.target, event.benchmark)] = event
    elif isinstance(event, ev.ContractFailed):
        health = _health(state, event.target)
        if health.failing == 0:
            health.streak += 1
        health.failing += 1
        health.errors = list(event.errors)
    elif isinstance(event, ev.ContractRecovered):
        health = _health(state, event.target)
        health.failing, health.errors = 0, []
    elif isinstance(event, ev.GpuBudget):
        state.gpu_budgets[event.target] = event
    elif isinstance(event, ev.LineReset):
        slot = (event.target, event.agent)
        state.line_resets[slot] = state.line_resets.get(slot, 0) + 1
    elif isinstance(event, ev.EndpointDown | ev.EndpointUp):
        _latch(state, event.endpoint, event, event.at)
    elif isinstance(event, ev.UnknownEvent):
        state.unknown += 1
    elif isinstance(event, ev.Archived | ev.ArchiveFailed | ev.ArchiveRestored) \
            and run is not None:
        _apply_archive_event(run, event)


def _latch(state: State, name: str, event: ev.EndpointDown | ev.EndpointUp | None,
           at: str) -> None:
    """One piece of evidence on endpoint ``name``: down, up, or (``None``) a leg on it
    the API did not refuse, which says it is up."""
    latch = state.endpoints.get(name)
    if latch is None:
        latch = state.endpoints[name] = EndpointLatch()
    if isinstance(event, ev.EndpointDown):
        if not latch.down:
            latch.since = at
        latch.down, latch.source, latch.refusal = True, event.source, event.refusal
        latch.detail = event.detail
    else:
        latch.down, latch.since = False, ""
        latch.detail = event.detail if event is not None else "a leg on it was answered"
    latch.at = at


def _apply_archive_event(run: RunRecord,
                         event: ev.Archived | ev.ArchiveFailed | ev.ArchiveRestored) -> None:
    """Archive facts arrive long after a run settled, so they bypass that guard."""
    if isinstance(event, ev.Archived):
        run.archive = event
        run.archive_error = None
    elif isinstance(event, ev.ArchiveFailed):
        if run.archive is None:
            run.archive_error = event.error
    else:
        run.restored_at = event.at


MICRO_USD = 1_000_000
"""``State.cost_days`` counts micro-dollars: whole numbers add up the same in any order,
so a cold fold and a warm one agree to the last digit."""


def _apply_run_event(run: RunRecord, file: str, event: ev.RunEvent, state: State) -> None:
    if run.settled:
        return
    at = event.at
    if isinstance(event, ev.RunEnded):
        order = order_of(file, event)
        if run.ended_order is None or order < run.ended_order:
            ending = _ENDING.get(event.ending) or Ending(event.ending)  # unknown: as written
            run.ending, run.ended_at = ending, at
            run.report = cites.whole(event.report, event.cites, run.texts)
            run.end_reason, run.withdrawn = event.reason, event.withdrawn
            run.takeaway = agent_report_title(run.report)
            run.ended_order = order
            if ending == Ending.MERGED and run.pr_number is not None:
                for pr in run.combines:  # the wins it combined: closed by lanes/integrate
                    state.superseded[(run.target, pr)] = run.pr_number
            run.outage, run.refusal = event.by == "outage", event.refusal
        run.state, run.park_reason = _ENDED, None
        run.leg_open, run.pending_request, run.pending_error = False, None, None
        _touch(run, at)
        return
    if isinstance(event, ev.Feedback):
        run.feedback[event.source_id] = FeedbackEntry(
            author=event.author, text=event.text, at=at, kind=event.source_kind,
            where=event.where)
        run.last_activity_at = max(run.last_activity_at, at)
        return
    if isinstance(event, ev.FeedbackCursor):
        run.comments_cursor = max(run.comments_cursor, event.comments_at)
        run.review_comments_cursor = max(run.review_comments_cursor, event.review_comments_at)
        if event.issue_comments_at > run.issue_comments_cursor:
            run.issue_comments_cursor = event.issue_comments_at
            run.issue_thread_settled = False
        if event.issue_thread_settled and event.issue_comments_at == run.issue_comments_cursor:
            run.issue_thread_settled = True
        return
    if isinstance(event, ev.FeedbackDelivered):
        run.delivered.update(event.source_ids)
        return
    if isinstance(event, ev.Outbox):
        run.outbox[event.key] = event.text
        return
    if isinstance(event, ev.Verdict):
        run.verdicts.append(event)
        run.verdict_untold = event.verdict != GateVerdict.IMPROVED  # credited: no leg tells it
        if event.change and event.verdict in SETTLED_VERDICTS:
            full = run.changes.get(event.submission, "")  # its sketch (change_sketch)
            key = full if exact_part(full) == event.change else event.change
            run.judged_changes.append((key, event.submission, str(event.verdict)))
    elif isinstance(event, ev.Launched):
        run.launches.append(event)
    elif isinstance(event, ev.SeedsDrawn):
        run.seeds[event.submission] = list(event.seeds)
        run.salts[event.submission] = event.salt
        if event.tree:
            run.trees[event.submission] = event.tree
        if event.change:
            run.changes[event.submission] = event.change
    elif isinstance(event, ev.RunAlpha):
        if run.alpha_fixed is None:  # fixed once: a second line never moves it
            run.alpha_fixed = event
    elif isinstance(event, ev.GateLook):
        run.looked = True
        looks = run.looks.setdefault(event.submission, [])
        if all(seen.look != event.look for seen in looks):
            looks.append(event)
    elif isinstance(event, ev.Confirmation):
        run.confirmations.setdefault(event.submission, event)
    # Facts first, whether or not the run has ended (an ending the tick wrote while
    # the run's job was still writing may be folded before or after these).
    if isinstance(event, ev.LegStarted):
        run.legs = max(run.legs, event.leg)
        run.refused = event.refused or run.refused
    elif isinstance(event, ev.LegEnded):
        run.cost_usd += event.cost_usd
        if event.cost_usd:
            run.max_leg_cost_usd = max(run.max_leg_cost_usd, event.cost_usd)
            days = state.cost_days.setdefault(run.target, {})
            days[at[:10]] = days.get(at[:10], 0) + round(event.cost_usd * MICRO_USD)
        run.session_id = event.session_id or run.session_id
        run.leg_refused = event.stop_reason == "refused"
        if not run.leg_refused:  # a refused leg counts toward no budget: it is retried
            run.wakes_without_progress = 0 if event.progress else run.wakes_without_progress + 1
            run.empty_legs = 0 if event.request else run.empty_legs + 1
            if event.request:
                run.empty_sleeps = run.empty_sleeps + 1 if _empty_sleep(event.request) else 0
            run.delivered.update(event.delivered)
            run.verdict_untold = False
        submitted = _submitted_report(event.request)
        if submitted:
            run.texts.update(cites.texts_of([submitted]))
    elif isinstance(event, ev.Parked):
        run.wake_job, run.deadline = event.wake_job, event.deadline
        run.park_jobs, run.park_seal, run.park_evals = event.job_ids, event.seal, event.evals
        run.park_left_out = event.left_out
        run.park_confirm = event.confirm
        run.park_look, run.park_first_pair = event.look, event.first_pair
        reason = _PARK_REASON[event.reason]
        if reason in _SLEEPS and not event.retry:
            run.sleeps += 1
        if reason == ParkReason.EVAL and not event.retry:
            run.submissions += 1
    elif isinstance(event, ev.DeadlineExtended):
        run.deadline = event.deadline
    elif isinstance(event, ev.InfraWait):
        run.infra_wait = event
    elif isinstance(event, ev.EndpointWait):
        run.endpoint_wait = event
    elif isinstance(event, ev.PublishReady):
        run.publish = _whole_body(run, event)
        run.revision = None
        run.blocked = blocked_why(event.findings, event.degraded) if event.draft else ""
        run.wakes_without_progress = 0  # a candidate to publish is progress
    elif isinstance(event, ev.BaseMoved):
        # the candidate as credited is no longer what would be published: measured again
        # against the new base, or rebased by its agent
        run.base_sha, run.rebase_to, run.rebased, run.publish = event.base, None, event, None
        if event.conflicts:
            run.feedback[f"base-{event.base[:12]}"] = base_conflict_feedback(event, at)
        run.last_activity_at = max(run.last_activity_at, at)
    elif isinstance(event, ev.LineSaved):
        if run.line is not None:
            run.line.head, run.line.withheld = event.sha, list(event.withheld)
            run.line.refused = list(event.refused)
    elif isinstance(event, ev.RevisionAsked):
        run.revisions = max(run.revisions, event.round)
        run.revision = msgspec.structs.replace(event, draft=_whole_body(run, event.draft))
        run.blocked = blocked_why(event.findings, "", asked=event.round)
        run.feedback[f"revision-{event.submission}"] = revision_feedback(event)
        run.last_activity_at = max(run.last_activity_at, at)
    _touch(run, at)
    if run.ended:
        return  # an ended run's state stays ended, with nothing pending
    if isinstance(event, ev.LegStarted):
        run.state, run.park_reason = _RUNNING, None
        run.leg_open, run.pending_request, run.pending_error = True, None, None
        run.leg_endpoint, run.leg_refused = event.endpoint, False
    elif isinstance(event, ev.LegEnded):
        run.leg_open = False
        run.pending_request = event.request if event.request is not None else {}
        run.pending_error = event.error
    elif isinstance(event, ev.Parked):
        run.state, run.park_reason = _PARKED, _PARK_REASON[event.reason]
        run.pending_request, run.pending_error = None, None
    elif isinstance(event, ev.PublishReady):
        run.state, run.park_reason = _PARKED, _PUBLISH
        run.pending_request, run.pending_error = None, None


def _empty_sleep(request: dict[str, object]) -> bool:
    """A committed ``sleep`` that staged nothing the kernel acts on (messages alone are
    not a step: they are posted, and the leg is refused)."""
    return request.get("verb") == "sleep" and not request.get("launches") \
        and not request.get("submit")


def _whole_body(run: RunRecord, ready: ev.PublishReady) -> ev.PublishReady:
    """``ready`` with its body whole (its cited paragraphs put back), which the run's
    texts then hold too."""
    if ready.cites:
        run.texts = cites.with_findings(run.texts, ready)
        ready = msgspec.structs.replace(
            ready, body=cites.whole(ready.body, ready.cites, run.texts), cites=[])
    run.texts.update(cites.texts_of([ready.body]))
    return ready


def _submitted_report(request: ev.RequestJson | None) -> str:
    """The report a leg's committed request submitted (empty: none)."""
    submit = request.get("submit") if request else None
    report = submit.get("report") if isinstance(submit, dict) else None
    return report if isinstance(report, str) else ""
