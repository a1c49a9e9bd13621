"""One tick: lock, pause, heartbeat, rebuild + reconcile, observe, lanes, execute,
commit. Stateless: everything it knows comes from the ledger and the outside world.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from outerloop import __version__, infra
from outerloop.atomic import write_atomic
from outerloop.clock import now_stamp
from outerloop.compute.base import JobObservation
from outerloop.config import Settings
from outerloop.contract import Contract
from outerloop.kernel import recorded
from outerloop.kernel.executor import Effects, Executor
from outerloop.kernel.lock import TickLock
from outerloop.ledger import events as ev
from outerloop.ledger.book import Book, LedgerWriter, is_tick_file, rebuild, target_dir_name
from outerloop.ledger.state import State
from outerloop.vocabulary import JobPurpose

if TYPE_CHECKING:
    from outerloop.kernel.actions import Action
    from outerloop.kernel.lanes.view import TickView

PAUSE_FILE = "PAUSE"
HOLD_FILE = "HOLD"
HEARTBEAT_FILE = "heartbeat.json"
MAX_HEARTBEAT_FAILURES = 10
MAX_HEARTBEAT_NOTES = 10


@dataclass
class TickReport:
    acted: bool = False
    held_by: str | None = None
    paused: bool = False
    events: int = 0
    actions: int = 0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    commit: str | None = None
    commit_s: float | None = None
    """How long the ledger's commit took (None: none was made), and how long the check
    of the committed files against git before it (``ledger/commit.py``)."""
    git_check_s: float | None = None
    ledger_damage: list[str] = field(default_factory=list)
    """Damaged ledger files and what was done (printed on stderr by every tick until
    whole: a frozen target's line repeats)."""
    ledger_git_repaired: list[str] = field(default_factory=list)
    """What this tick's commit mended in a ledger repository a machine crash broke
    (``ledger/gitrepair.py``); also in ``notes`` and the heartbeat."""

    def summary(self) -> str:
        if self.held_by:
            return f"another tick is running ({self.held_by}); nothing to do"
        if self.paused:
            return "paused (PAUSE exists; `outerloop resume` to continue): no action taken"
        text = (f"tick: {self.actions} actions, {self.events} events, "
                f"{len(self.failures)} failed, {self.seconds:.2f}s")
        return text


def write_heartbeat(home: Path, extra: dict[str, object] | None = None) -> None:
    data = {"time": now_stamp(), "host": os.uname().nodename, "pid": os.getpid(),
            "version": __version__, **(extra or {})}
    write_atomic(home / HEARTBEAT_FILE, json.dumps(data) + "\n")


def record_job_ends(state: State, jobs: dict[str, JobObservation],
                    writers: Callable[[str], LedgerWriter]) -> int:
    """Append ``job_ended`` for each live job now observed terminal (none into a
    frozen target's damaged ledger)."""
    count = 0
    for job_id, seen in jobs.items():
        job = state.jobs.get(job_id)
        if job is None or job.terminal or not seen.state.terminal or job.target is None \
                or state.frozen_target(job.target):
            continue
        writers(job.target).append(ev.JobEnded(
            run=job.run, job_id=job_id, state=seen.state.value, exit_code=seen.exit_code,
            elapsed_s=seen.elapsed_s, gpu_seconds=seen.gpu_seconds,
            task_elapsed_s=dict(seen.task_elapsed_s)))
        count += 1
    return count


MAX_DAMAGE_NOTES = 20


def damage_notes(found: list[tuple[str, int, str]]) -> list[str]:
    """One note per damaged ledger line this rebuild met (``ledger/damage.py``)."""
    notes = [f"ledger/{file}:{line}: {what}" for file, line, what in found[:MAX_DAMAGE_NOTES]]
    if len(found) > MAX_DAMAGE_NOTES:
        notes.append(f"... and {len(found) - MAX_DAMAGE_NOTES} more damaged ledger lines "
                     f"(`outerloop doctor` lists them)")
    return notes


def _record_restored(settings: Settings, state: State,
                     writers: Callable[[str], LedgerWriter]) -> None:
    """A warning in each target's own history for each of its files restored now."""
    for target in settings.targets:
        name = target_dir_name(target.repo)
        for line in state.ledger_damage:
            if line.startswith(f"LEDGER DAMAGED ledger/{name}/") and name not in state.frozen:
                writers(target.repo).append(ev.Note(level="warning", text=line))


def run_tick(settings: Settings, *, progress: Callable[[str], None] | None = None) -> TickReport:
    """Run one tick. Never raises for one failed action; the lock is always released."""
    from outerloop.kernel.lanes import plan
    from outerloop.kernel.lanes.endpoints import tick_notes as endpoint_notes
    from outerloop.kernel.lanes.machine import tick_notes as machine_notes
    from outerloop.kernel.lanes.view import TickView
    from outerloop.kernel.observe import observe

    home = settings.home
    report = TickReport()
    started = time.monotonic()
    lock = TickLock(home, settings.cadence.tick_timeout_s)
    if not lock.acquire():
        report.held_by = lock.holder.describe() if lock.holder else "unknown holder"
        return report
    say = progress or (lambda _text: None)
    try:
        from outerloop.sandbox.kept_warning import tick_warning

        unconfined = tick_warning(home, settings.sandbox)
        if unconfined:
            report.notes.append(unconfined)
        environment = _environment_notes(settings)
        report.notes.extend(environment)
        if lock.warning:
            report.notes.append(lock.warning)
        if (home / PAUSE_FILE).exists():
            write_heartbeat(home, {"paused": True})
            report.paused = True
            return report
        write_heartbeat(home)
        report.acted = True
        book = Book(home)
        writers = book.writers
        if settings.ledger_remote:  # a restored ledger takes its lost lines back first
            say("catching up with the ledger remote")
            caught = book.catch_up(settings.ledger_remote)
            if caught:
                report.notes.append(caught)
        effects = Effects(settings)
        executor = Executor(effects, writers)
        say("rebuilding state")
        state = book.read()
        report.notes.extend(damage_notes(state.damaged_new))
        report.ledger_damage = list(state.ledger_damage)
        _record_restored(settings, state, writers)
        frozen = frozenset(state.frozen)
        if lock.warning:
            for target in settings.targets:
                if not state.frozen_target(target.repo):
                    writers(target.repo).append(ev.Note(level="warning", text=lock.warning))
        pending = [p for p in state.intents.values() if is_tick_file(p.file)
                   and p.file.split("/", 1)[0] not in frozen]
        for intent in sorted(pending, key=lambda p: p.at):
            say(f"reconciling {intent.key}")
            executor.reconcile(recorded.with_texts(intent, state))
        say("observing")
        obs = observe(state, effects)
        if record_job_ends(state, obs.jobs, writers) or pending:
            state = book.read()
            report.ledger_damage.extend(d for d in state.ledger_damage
                                        if d not in report.ledger_damage)
        boards = None
        if state.fresh:  # the record lane looks at the boards (a quiet tick: never)
            from outerloop import board_memo

            boards = board_memo.load(home)
        view = TickView(state=state, obs=obs, settings=settings,
                        hold=(home / HOLD_FILE).exists(),
                        environment=_holding(settings, environment), boards=boards)
        actions = [a for a in plan(view) if not state.frozen_target(a.target)]
        report.notes.extend(machine_notes(view, actions))
        report.notes.extend(endpoint_notes(view))
        deadline = started + settings.cadence.tick_timeout_s
        for action in actions:
            if time.monotonic() > deadline:
                report.notes.append("tick time budget spent; remaining actions wait")
                break
            say(f"{action.kind} {action.run or ''}".strip())
            outcome = executor.run(action, state.done_keys)
            if outcome.waited:
                continue  # its prerequisite failed (reported), or is not settled yet
            report.actions += 1
            if not outcome.ok:
                report.failures.append(f"{action.key}: {outcome.error}")
        try:  # what status shows; never worth a failed tick
            waiting = _waiting(view, actions, executor)
        except Exception as exc:
            waiting = {}
            report.notes.append(f"waiting reasons not computed: {type(exc).__name__}: {exc}")
        report.notes.extend(_stalled_starts(state, obs.now))
        if obs.compute_error:
            report.notes.append(f"compute unavailable, job states deferred: {obs.compute_error}")
        for target_obs in obs.targets.values():
            problem = target_obs.error or target_obs.contract_error
            if problem:
                report.notes.append(problem)
            report.notes.extend(_ignored_fields(target_obs.repo, target_obs.contract))
        report.events = book.appended
        if book.needs_commit(state):
            committed = book.commit(
                state, repos={target_dir_name(t.repo): t.repo for t in settings.targets},
                frozen=frozen, stale_lock_s=settings.cadence.tick_timeout_s,
                remote=settings.ledger_remote)
            report.ledger_damage.extend(committed.damage)
            report.git_check_s = committed.git_check_s
            report.commit_s = committed.commit_s
            report.commit = committed.sha
            report.notes.extend(committed.notes)
            report.ledger_git_repaired = committed.repaired
            try:  # the board is a view: never worth a failed tick
                from outerloop import board_memo
                from outerloop.board import write_board

                boards = boards if boards is not None else board_memo.load(home)
                write_board(settings, rebuild(home, save_cache=False)
                            if report.events else state, memo=boards)
                board_memo.save(home, boards)
            except Exception as exc:
                report.notes.append(f"board not rendered: {type(exc).__name__}: {exc}")
        problem = book.push(settings.ledger_remote)  # also a refused one, retried
        if problem:
            report.notes.append(problem)
        write_heartbeat(home, {"last_tick_s": round(time.monotonic() - started, 3),
                               "commit_s": _rounded(report.commit_s),
                               "git_check_s": _rounded(report.git_check_s),
                               "actions": report.actions, "events": report.events,
                               "failures": report.failures[:MAX_HEARTBEAT_FAILURES],
                               "failed": len(report.failures),
                               "notes": report.notes[:MAX_HEARTBEAT_NOTES],
                               "ledger_damage": report.ledger_damage[:MAX_HEARTBEAT_NOTES],
                               "ledger_git_repaired": report.ledger_git_repaired,
                               "waiting": waiting})
    finally:
        lock.release()
        report.seconds = time.monotonic() - started
    return report


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def _waiting(view: TickView, actions: list[Action], executor: Executor) -> dict[str, str]:
    """Why each queued run did not start (``status``): a start that failed this tick
    says so; the others as admission explains them. And each run whose leg job waits to
    run again after its node failed (``machine.requeued_lines``)."""
    from outerloop.kernel.actions import PrepareWorkspace, SubmitJob
    from outerloop.kernel.lanes.admission import why_waiting
    from outerloop.kernel.lanes.machine import requeued_lines

    def starts(action: Action | None) -> bool:
        return isinstance(action, PrepareWorkspace) or (
            isinstance(action, SubmitJob) and action.purpose == JobPurpose.CLIMB)

    started = {str(o.action.run) for o in executor.outcomes if o.ok
               and isinstance(o.action, SubmitJob) and o.action.purpose == JobPurpose.CLIMB}
    waiting = why_waiting(view, actions, started)
    for run_id, line in requeued_lines(view).items():
        waiting.setdefault(run_id, line)
    for outcome in executor.outcomes:
        if outcome.action is not None and starts(outcome.action) and not outcome.ok \
                and not outcome.waited and outcome.action.run in waiting:
            fix = infra.refused_fix(outcome.error or "")
            waiting[str(outcome.action.run)] = (f"its start failed this tick "
                                                f"({outcome.error}); retried later"
                                                + (f"; {fix}" if fix else ""))
    return waiting


def _stalled_starts(state: State, now: datetime) -> list[str]:
    """A note for each queued run whose start has failed for long (``lanes/starting``)."""
    from outerloop.kernel.lanes.starting import stalled_note

    notes = [stalled_note(r, now) for r in state.active_runs() if not r.admitted]
    return [n for n in notes if n]


def admission_holds(settings: Settings) -> tuple[bool, str]:
    """What holds every new run of the home as a tick would see it now: ``HOLD`` exists,
    and the environment trap every job inherits ("": none). For a reader that asks what
    the next tick does (``outerloop explain --issue``)."""
    hold = (settings.home / HOLD_FILE).exists()
    return hold, _holding(settings, _environment_notes(settings))


def _environment_notes(settings: Settings) -> list[str]:
    """Environment traps (``harness/needs.py``): a command confined children need that
    the sandbox cannot start. Never worth a failed tick."""
    from outerloop.harness.needs import tick_notes

    try:
        return tick_notes(settings)
    except Exception as exc:
        return [f"environment not checked: {type(exc).__name__}: {exc}"]


def _holding(settings: Settings, traps: list[str]) -> str:
    """The traps that hold admission: those every job inherits. With ``[compute] setup``
    lines a job may fix its own ``PATH`` (``module load``), so only the attempt job's
    own check (before a run's first leg) can tell."""
    from outerloop.harness.needs import ENVIRONMENT_BROKEN

    found = [t for t in traps if t.startswith(ENVIRONMENT_BROKEN)]
    return "; ".join(found) if found and not settings.compute.setup else ""


def _ignored_fields(repo: str, contract: Contract | None) -> list[str]:
    """The target's contract fields this version accepts but does not act on."""
    if contract is None:
        return []
    from outerloop.contract_fields import ignored_field_warnings

    return [f"{repo}: {line}" for line in ignored_field_warnings(contract)]
