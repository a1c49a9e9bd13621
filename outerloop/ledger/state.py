"""Fold the ledger into a typed ``State``.

``rebuild(home)`` reads every ledger file and folds its events, in ``(at, file, seq)``
order, into ``State``. The fold is pure and deterministic; order-sensitive facts are
decided by event time, not by the order files were read (the first ``run_ended`` by
time is a run's ending), so an incremental fold agrees with a cold one.

Cost: a cache (``cache/fold.pickle`` in the home) keeps each file's (size, mtime,
inode, byte offset) and the folded ``State``. A rebuild reads only bytes appended
since, so a quiet tick costs a directory walk and one pickle load, not history. A file
that shrank or was replaced invalidates the cache and the fold starts cold.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from outerloop.ledger import events as ev
from outerloop.ledger.store import LEDGER_DIR, RUNS_DIR, TICK_FILE, read_lines

CACHE_FILE = "cache/fold.pickle"
FOLD_VERSION = 6

TERMINAL_JOB_STATES = frozenset(
    {"completed", "failed", "timeout", "out_of_memory", "cancelled", "node_fail", "interrupted"}
)


@dataclass(slots=True)
class JobRecord:
    job_id: str
    name: str
    purpose: str
    run: str | None
    target: str | None
    launch: str | None
    submitted_at: str
    state: str = "pending"
    exit_code: int | None = None
    elapsed_s: int = 0
    ended_at: str | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_JOB_STATES


@dataclass(slots=True)
class PendingIntent:
    file: str
    key: str
    action: dict[str, Any]
    at: str


@dataclass(slots=True)
class RunRecord:
    run_id: str
    target: str
    benchmark: str
    agent: str
    issue: int | None
    issue_title: str
    hypothesis: str
    queued_at: str
    state: str = "queued"
    """queued | running | parked | ended"""
    park_reason: str | None = None
    """jobs | review | publish, while parked"""
    updated_at: str = ""
    admitted: bool = False
    climb_job: str | None = None
    job_ids: list[str] = field(default_factory=list)
    wake_job: str | None = None
    deadline: str | None = None
    legs: int = 0
    wakes_without_progress: int = 0
    sleeps: int = 0
    cost_usd: float = 0.0
    ending: str | None = None
    ended_at: str | None = None
    report: str = ""
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    publish: dict[str, Any] | None = None
    pr_number: int | None = None
    pr_head: str | None = None
    published_sha: str | None = None
    feedback: dict[str, dict[str, str]] = field(default_factory=dict)
    delivered: set[str] = field(default_factory=set)
    outbox: dict[str, str] = field(default_factory=dict)
    posted: set[str] = field(default_factory=set)
    claim_no: int = 1
    last_activity_at: str = ""
    base_sha: str | None = None
    branch: str | None = None
    session_id: str | None = None
    leg_open: bool = False
    pending_request: dict[str, Any] | None = None
    """A leg's committed request not yet acted on (a crash in between)."""
    pending_error: str | None = None
    park_jobs: list[str] = field(default_factory=list)
    park_seal: str | None = None
    park_evals: list[dict[str, str]] = field(default_factory=list)
    launches: list[dict[str, Any]] = field(default_factory=list)
    submissions: int = 0
    seeds: dict[int, list[int]] = field(default_factory=dict)
    empty_legs: int = 0
    outage: bool = False
    refusal: str | None = None
    """The model API's refusal kind when the run ended on an outage (the cooldown)."""

    @property
    def ended(self) -> bool:
        return self.state == "ended"

    @property
    def undelivered(self) -> dict[str, dict[str, str]]:
        return {k: v for k, v in self.feedback.items() if k not in self.delivered}


@dataclass(slots=True)
class State:
    runs: dict[str, RunRecord] = field(default_factory=dict)
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    intents: dict[tuple[str, str], PendingIntent] = field(default_factory=dict)
    done_keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    claims: dict[tuple[str, int], int] = field(default_factory=dict)
    leaders: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    notes: list[tuple[str, str, str]] = field(default_factory=list)
    events: int = 0
    fresh: int = 0
    """Events folded by the latest rebuild (0: nothing new since the cache)."""
    malformed: int = 0
    unknown: int = 0
    last_at: str = ""

    def live_jobs(self) -> list[JobRecord]:
        return [j for j in self.jobs.values() if not j.terminal]

    def active_runs(self, target: str | None = None) -> list[RunRecord]:
        return [r for r in self.runs.values()
                if not r.ended and (target is None or r.target == target)]

    def runs_of_issue(self, target: str, issue: int) -> list[RunRecord]:
        return [r for r in self.runs.values() if r.target == target and r.issue == issue]


MAX_NOTES = 200


# the fold ------------------------------------------------------------------------


def _touch(run: RunRecord, at: str) -> None:
    if at > run.updated_at:
        run.updated_at = at


def _on_done(state: State, file: str, event: ev.Done) -> None:
    pending = state.intents.pop((file, event.key), None)
    state.done_keys[event.key] = event.result
    if pending is None:
        return
    action = pending.action
    kind = action.get("kind")
    run = state.runs.get(str(action.get("run"))) if action.get("run") else None
    if kind == "submit_job" and "job_id" in event.result:
        job_id = str(event.result["job_id"])
        spec = action.get("spec", {})
        state.jobs[job_id] = JobRecord(
            job_id=job_id, name=str(spec.get("name", "")), purpose=str(action.get("purpose")),
            run=action.get("run"), target=action.get("target"), launch=action.get("launch"),
            submitted_at=event.at,
        )
        if run is not None:
            run.job_ids.append(job_id)
            if action.get("purpose") == "climb":
                run.admitted = True
                run.climb_job = job_id
            _touch(run, event.at)
    elif kind == "open_pr" and run is not None and "number" in event.result:
        run.pr_number = int(event.result["number"])
        run.pr_head = str(action.get("head"))
        run.published_sha = str(action.get("sha"))
        run.state, run.park_reason = ("parked", "review") if not run.ended else (run.state, None)
        run.last_activity_at = event.at
        _touch(run, event.at)
    elif kind == "prepare_workspace" and run is not None:
        run.base_sha = str(event.result.get("base") or action.get("base"))
        run.branch = str(action.get("branch"))
    elif kind == "post_comment" and run is not None:
        marker_key = str(action.get("marker_key", ""))
        run.posted.add(marker_key)


def _apply(state: State, file: str, event: Any) -> None:
    state.events += 1
    if event.at > state.last_at:
        state.last_at = event.at
    kind = event.kind
    run = state.runs.get(event.run) if event.run else None
    if isinstance(event, ev.Intent):
        state.intents[(file, event.key)] = PendingIntent(file, event.key, event.action, event.at)
    elif isinstance(event, ev.Done):
        _on_done(state, file, event)
    elif isinstance(event, ev.Failed):
        state.intents.pop((file, event.key), None)
    elif isinstance(event, ev.JobEnded):
        job = state.jobs.get(event.job_id)
        if job is not None:
            job.state, job.exit_code, job.elapsed_s = event.state, event.exit_code, event.elapsed_s
            job.ended_at = event.at
    elif isinstance(event, ev.RunQueued) and event.run:
        state.runs[event.run] = RunRecord(
            run_id=event.run, target=event.target, benchmark=event.benchmark, agent=event.agent,
            issue=event.issue, issue_title=event.issue_title, hypothesis=event.hypothesis,
            queued_at=event.at, updated_at=event.at, claim_no=event.claim_no,
            last_activity_at=event.at,
        )
        if event.issue is not None:
            key = (event.target, event.issue)
            state.claims[key] = state.claims.get(key, 0) + 1
    elif isinstance(event, ev.Note):
        state.notes.append((event.at, event.level, event.text))
        del state.notes[:-MAX_NOTES]
    elif isinstance(event, ev.Leader):
        state.leaders[(event.target, event.benchmark)] = {
            "value": event.value, "run": event.run, "at": event.at, "baseline": event.baseline,
        }
    elif run is not None:
        _apply_run_event(run, event)
    elif kind not in ev.KNOWN_KINDS:
        state.unknown += 1


def _apply_run_event(run: RunRecord, event: Any) -> None:
    at = event.at
    if isinstance(event, ev.RunEnded):
        if run.ended_at is None or at < run.ended_at:
            run.ending, run.ended_at, run.report = event.ending, at, event.report
        run.state, run.park_reason = "ended", None
        run.leg_open, run.pending_request = False, None
        run.outage = run.outage or event.by == "outage"
        run.refusal = event.refusal or run.refusal
        _touch(run, at)
        return
    if isinstance(event, ev.Feedback):
        run.feedback[event.source_id] = {"author": event.author, "text": event.text, "at": at,
                                         "kind": event.source_kind, "where": event.where}
        run.last_activity_at = max(run.last_activity_at, at)
        return
    if isinstance(event, ev.FeedbackDelivered):
        run.delivered.update(event.source_ids)
        return
    if isinstance(event, ev.Outbox):
        run.outbox[event.key] = event.text
        return
    if isinstance(event, ev.Verdict):
        run.verdicts.append(event.model_dump(exclude={"v", "seq", "kind", "run"}))
    elif isinstance(event, ev.Launched):
        run.launches.append(event.model_dump(exclude={"v", "seq", "kind", "run"}))
    elif isinstance(event, ev.SeedsDrawn):
        run.seeds[event.submission] = list(event.seeds)
    if run.ended:
        return
    if isinstance(event, ev.LegStarted):
        run.state, run.park_reason, run.legs = "running", None, max(run.legs, event.leg)
        run.leg_open, run.pending_request, run.pending_error = True, None, None
    elif isinstance(event, ev.LegEnded):
        run.cost_usd += event.cost_usd
        run.wakes_without_progress = 0 if event.progress else run.wakes_without_progress + 1
        run.leg_open = False
        run.session_id = event.session_id or run.session_id
        run.pending_request = event.request if event.request is not None else {}
        run.pending_error = event.error
        run.empty_legs = 0 if event.request else run.empty_legs + 1
    elif isinstance(event, ev.Parked):
        run.state, run.park_reason = "parked", event.reason
        run.wake_job, run.deadline = event.wake_job, event.deadline
        run.park_jobs, run.park_seal, run.park_evals = event.job_ids, event.seal, event.evals
        run.pending_request, run.pending_error = None, None
        if event.reason in ("jobs", "eval"):
            run.sleeps += 1
        if event.reason == "eval":
            run.submissions += 1
    elif isinstance(event, ev.PublishReady):
        run.state, run.park_reason = "parked", "publish"
        run.pending_request, run.pending_error = None, None
        run.publish = {"seal_sha": event.seal_sha, "branch": event.branch,
                       "title": event.title, "body": event.body, "report": event.report,
                       "experiments": event.experiments}
    _touch(run, at)


def _file_key(path: Path, ledger: Path) -> str:
    return str(path.relative_to(ledger))


# reading ------------------------------------------------------------------------


def _parse(lines: list[bytes]) -> tuple[list[Any], int]:
    """Typed events from JSON lines; malformed lines are skipped and counted.

    One bulk validation in pydantic's core; only when it fails does the slow
    per-line path run to find and skip the bad lines."""
    if not lines:
        return [], 0
    try:
        return list(ev.EVENTS_ADAPTER.validate_json(b"[" + b",".join(lines) + b"]")), 0
    except ValidationError:
        pass
    good: list[Any] = []
    bad = 0
    for line in lines:
        try:
            good.append(ev.EVENT_ADAPTER.validate_json(line))
        except ValidationError:
            bad += 1
    return good, bad


def ledger_files(home: Path) -> list[Path]:
    """Every ledger file: ``<target>/tick.jsonl`` and ``<target>/runs/*.jsonl``."""
    root = home / LEDGER_DIR
    found: list[Path] = []
    if not root.is_dir():
        return found
    for target in os.scandir(root):
        if not target.is_dir() or target.name.startswith("."):
            continue
        tick = Path(target.path) / TICK_FILE
        if tick.exists():
            found.append(tick)
        runs = Path(target.path) / RUNS_DIR
        if runs.is_dir():
            found.extend(Path(e.path) for e in os.scandir(runs) if e.name.endswith(".jsonl"))
    return found


@dataclass(slots=True)
class _FileMark:
    size: int
    mtime_ns: int
    inode: int
    offset: int


@dataclass(slots=True)
class _Cache:
    version: int
    marks: dict[str, _FileMark]
    state: State


def _load_cache(path: Path) -> _Cache | None:
    try:
        with path.open("rb") as handle:
            cache = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError):
        return None
    if not isinstance(cache, _Cache) or cache.version != FOLD_VERSION:
        return None
    return cache


def _save_cache(path: Path, cache: _Cache) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with tmp.open("wb") as handle:
        pickle.dump(cache, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def rebuild(home: Path, *, use_cache: bool = True, save_cache: bool = True,
            files: Iterable[Path] | None = None) -> State:
    """Fold the ledger into ``State``, reading only what changed since the cache.

    ``files`` limits the fold to some files (a run job folding its own target's
    tick file and its own run file); such partial folds never touch the cache.
    """
    ledger = home / LEDGER_DIR
    partial = files is not None
    paths = list(files) if files is not None else ledger_files(home)
    cache_path = home / CACHE_FILE
    cache = _load_cache(cache_path) if use_cache and not partial else None
    if cache is None:
        cache = _Cache(FOLD_VERSION, {}, State())
    marks = cache.marks
    pending: list[tuple[str, str, int, Any]] = []
    changed = False
    seen: set[str] = set()
    for path in paths:
        try:
            info = path.stat()
        except FileNotFoundError:
            continue
        key = _file_key(path, ledger)
        seen.add(key)
        mark = marks.get(key)
        if mark is not None and (mark.size, mark.mtime_ns) == (info.st_size, info.st_mtime_ns):
            continue
        if mark is not None and (info.st_size < mark.offset or info.st_ino != mark.inode):
            return rebuild(home, use_cache=False, save_cache=save_cache)
        start = mark.offset if mark is not None else 0
        result = read_lines(path, start)
        parsed, bad = _parse(result.lines)
        cache.state.malformed += bad
        pending.extend((e.at, key, e.seq, e) for e in parsed)
        marks[key] = _FileMark(info.st_size, info.st_mtime_ns, info.st_ino, result.end_offset)
        changed = True
    if not partial and set(marks) - seen:
        return rebuild(home, use_cache=False, save_cache=save_cache)
    pending.sort(key=lambda item: (item[0], item[1], item[2]))
    cache.state.fresh = len(pending)
    for _, key, _, event in pending:
        _apply(cache.state, key, event)
    if changed and save_cache and not partial:
        _save_cache(cache_path, cache)
    return cache.state


def run_files(home: Path, target: str, run_id: str) -> list[Path]:
    """The files a run's own job folds: its target's tick file and its run file."""
    from outerloop.ledger.store import run_file, tick_file

    return [tick_file(home, target), run_file(home, target, run_id)]
