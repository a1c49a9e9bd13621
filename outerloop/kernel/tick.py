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
from outerloop.ledger import gitrepo, segments, store, sweep
from outerloop.ledger import state as ledger_state
from outerloop.ledger.pending import note as note_for_commit
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
    of the committed files against git before it (``integrity.unread_changes``)."""
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


class _Writers:
    """One ``LedgerWriter`` per target's tick file, created on first use."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.writers: dict[str, store.LedgerWriter] = {}
        self.clock = store.LogicalClock()
        """Shared by every target's writer; observes each rebuild's ``State.clock``."""

    def __call__(self, target: str) -> store.LedgerWriter:
        if target not in self.writers:
            writer = store.LedgerWriter(store.tick_file(self.home, target), self.clock)
            # named before its first line: a tick killed before its commit heals
            note_for_commit(self.home / store.LEDGER_DIR, self.keys(target, writer))
            self.writers[target] = writer
        return self.writers[target]

    def keys(self, target: str, writer: store.LedgerWriter) -> list[str]:
        """The ledger keys of the tick segments ``writer`` wrote (or will write next):
        never a full segment it did not write (segment 1 of a long history is the
        series' name; hashing it again would cost what segments saved)."""
        folder = store.target_dir_name(target)
        return [f"{folder}/{path.name}"
                for path in dict.fromkeys([*writer.started, segments.live(writer.path)])]

    def written(self) -> list[str]:
        return [key for target, writer in self.writers.items()
                for key in self.keys(target, writer)]

    @property
    def appended(self) -> int:
        return sum(w.appended for w in self.writers.values())


def _is_tick_file(key: str) -> bool:
    return segments.of_series(key, store.TICK_FILE)


def record_job_ends(state: ledger_state.State, jobs: dict[str, JobObservation],
                    writers: _Writers) -> int:
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


def _record_restored(settings: Settings, state: ledger_state.State, writers: _Writers) -> None:
    """A warning in each target's own history for each of its files restored now."""
    for target in settings.targets:
        name = store.target_dir_name(target.repo)
        for line in state.ledger_damage:
            if line.startswith(f"LEDGER DAMAGED ledger/{name}/") and name not in state.frozen:
                writers(target.repo).append(ev.Note(level="warning", text=line))


def run_tick(settings: Settings, *, progress: Callable[[str], None] | None = None) -> TickReport:
    """Run one tick. Never raises for one failed action; the lock is always released."""
    from outerloop.kernel.lanes import plan
    from outerloop.kernel.lanes.endpoints import tick_notes as endpoint_notes
    from outerloop.kernel.lanes.housekeeping import due_after
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
        if settings.ledger_remote:  # a restored ledger takes its lost lines back first
            from outerloop.ledger.catchup import catch_up

            say("catching up with the ledger remote")
            caught = catch_up(home, settings.ledger_remote)
            if caught:
                report.notes.append(caught)
        writers = _Writers(home)
        effects = Effects(settings)
        executor = Executor(effects, writers)
        say("rebuilding state")
        due = due_after(settings)  # when housekeeping acts: the cache keeps those runs hot
        state = ledger_state.rebuild(home, heal=True, due_after=due)
        heads = dict(state.heads)  # what this tick attests at its commit
        writers.clock.observe(state.clock)
        report.notes.extend(damage_notes(state.damaged_new))
        report.ledger_damage = list(state.ledger_damage)
        _record_restored(settings, state, writers)
        frozen = frozenset(state.frozen)
        if lock.warning:
            for target in settings.targets:
                if not state.frozen_target(target.repo):
                    writers(target.repo).append(ev.Note(level="warning", text=lock.warning))
        pending = [p for p in state.intents.values() if _is_tick_file(p.file)
                   and p.file.split("/", 1)[0] not in frozen]
        for intent in sorted(pending, key=lambda p: p.at):
            say(f"reconciling {intent.key}")
            executor.reconcile(recorded.with_texts(intent, state))
        say("observing")
        obs = observe(state, effects)
        if record_job_ends(state, obs.jobs, writers) or pending:
            state = ledger_state.rebuild(home, heal=True, due_after=due)
            heads.update(state.heads)
            writers.clock.observe(state.clock)
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
        report.events = writers.appended
        if report.events or state.fresh or gitrepo.has_backlog(home) or state.frozen:
            for repo, writer in writers.writers.items():  # a tick file (or segment)
                for path in dict.fromkeys([*writer.started, writer.path]):  # this tick
                    start = segments.start_link(path)
                    heads.setdefault(f"{store.target_dir_name(repo)}/{path.name}",
                                     ledger_state.Head(0, 0, start.value, start.chained,
                                                       False))
            changed: set[str] = set()
            checking = time.monotonic()
            named = _commit_takes(home, heads, writers)
            swept = {} if named is None else sweep.suspects(home)
            kept_out = _unread_changes(settings, heads, writers, report,
                                       frozen | set(state.frozen), changed,
                                       None if named is None else named | set(swept))
            whole = {key: at for key, at in swept.items() if key not in kept_out}
            changed.update(whole)  # restored, or lines appended: the commit takes them
            sweep.seen(home, whole)
            report.git_check_s = time.monotonic() - checking

            def check_everything() -> list[str]:  # the commit takes every file after all
                return _unread_changes(settings, heads, writers, report,
                                       frozen | set(state.frozen), set(), None)
            _attest(home, heads, frozen | set(state.frozen), report)
            note_for_commit(home / store.LEDGER_DIR, [*writers.written(), *sorted(changed)])
            committing = time.monotonic()
            committed = gitrepo.commit(home, report.events + state.fresh,
                                       stale_lock_s=settings.cadence.tick_timeout_s,
                                       keep_out=sorted(frozen | set(state.frozen))
                                       + kept_out,
                                       remote=settings.ledger_remote,
                                       check_everything=None if named is None
                                       else check_everything)
            report.commit_s = time.monotonic() - committing
            report.commit = committed.sha
            report.notes.extend(committed.notes)
            report.ledger_git_repaired = committed.repaired
            try:  # the board is a view: never worth a failed tick
                from outerloop import board_memo
                from outerloop.board import write_board

                boards = boards if boards is not None else board_memo.load(home)
                write_board(settings, ledger_state.rebuild(home, save_cache=False)
                            if report.events else state, memo=boards)
                board_memo.save(home, boards)
            except Exception as exc:
                report.notes.append(f"board not rendered: {type(exc).__name__}: {exc}")
        if settings.ledger_remote and gitrepo.unpushed(home):  # also a refused one, retried
            problem = gitrepo.push(home, settings.ledger_remote)
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


def _commit_takes(home: Path, heads: dict[str, ledger_state.Head], writers: _Writers
                  ) -> set[str] | None:
    """The files this tick's commit takes (``ledger/pending.py``): those named since the
    last commit, the tick segments its writers wrote and the heads segment it attests
    into, per target (and the suspects of ``ledger/sweep.py``, added by the caller);
    None when it takes every file (``git add -A``)."""
    from outerloop.ledger import attest, pending

    ledger = home / store.LEDGER_DIR
    named = pending.read(ledger)
    if named is None:
        return None
    folders = {key.split("/", 1)[0] for key in heads} | {
        key.split("/", 1)[0] for key in writers.written()}
    attested = {f"{folder}/{segments.live(ledger / folder / attest.HEADS_FILE).name}"
                for folder in folders}
    return named | set(writers.written()) | attested


def _unread_changes(settings: Settings, heads: dict[str, ledger_state.Head],
                    writers: _Writers, report: TickReport,
                    frozen: set[str] | frozenset[str], changed: set[str],
                    named: set[str] | None) -> list[str]:
    """Committed ledger files the fold did not read (settled runs' files, heads) that
    changed: restored from git (a warning in the target's ledger), else kept out of the
    commit. Returns the files kept out. ``named``: the files the commit takes, the only
    ones looked at (``_commit_takes``); None: every committed file, and ``changed`` gets
    each that differs from ``HEAD`` (for the commit to take)."""
    from outerloop.ledger import integrity

    home = settings.home
    found = integrity.unread_changes(home, home / store.LEDGER_DIR,
                                     {key for key, head in heads.items() if head.read},
                                     ledger_state.is_ledger_key, frozenset(frozen), changed,
                                     named)
    repos = {store.target_dir_name(t.repo): t.repo for t in settings.targets}
    kept_out = []
    for damage in found:
        report.ledger_damage.append(damage.line(frozen=False))
        if not damage.restored:
            kept_out.append(damage.file)
        elif damage.target_dir in repos:
            writers(repos[damage.target_dir]).append(ev.Note(
                level="warning", text=damage.line(frozen=False)))
    return kept_out


def _attest(home: Path, heads: dict[str, ledger_state.Head], frozen: set[str] | frozenset[str],
            report: TickReport) -> None:
    """Sign the heads of the files this tick read or wrote, before they are committed
    (``ledger/attest.py``); a tick that cannot still commits, and says why."""
    from outerloop.errors import ConfigError
    from outerloop.ledger import attest

    try:
        attest.attest(home, heads, skip=frozen)
    except (OSError, ConfigError) as exc:
        report.notes.append(f"ledger heads not attested this tick ({exc}); the next "
                            f"commit attests them")


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


def _stalled_starts(state: ledger_state.State, now: datetime) -> list[str]:
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
