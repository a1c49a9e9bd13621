"""Parse ``squeue``/``sacct`` output and decide each job's state; tell a refused
``sbatch`` from an unanswered one (``sbatch_refused``). Pure: no I/O.

The formats are the ones verified on Slurm 22.05 (``shared/slurm/README.md``):

- ``squeue --me --noheader -r -o "%i|%j|%T|%M|%P|%V|%r|%b|%l"``: one row per job or
  array task (``62_0``); ``%M`` is the current attempt's run time (``0:05``,
  ``1:02:03``, ``2-00:00:00``), ``%l`` the limit (``UNLIMITED`` or a duration).
- ``sacct -D -X -P -n -o JobID,JobIDRaw,JobName,State,ExitCode,ElapsedRaw,Start,End,
  TimelimitRaw``: one row per attempt (``-D`` keeps the ``REQUEUED``/``PREEMPTED`` rows
  of earlier attempts), in order. ``JobID`` is the display id (``22_1``; pending tasks
  still folded as ``22_[2-3%2]``), which is how array tasks are told apart: their
  ``JobIDRaw`` is a different number per task.

How a state is decided (ARCHITECTURE §8): while the queue lists a job, the queue
wins; accounting decides only terminal states, because it lags the queue by seconds
(a just-started job reads ``allocation|PENDING``). Accounting that reads a live state
for a job the queue no longer lists is *unknown*, never a conclusion. No record at
all is ``GONE`` (not "finished"); an array task with no record while its siblings
have one was cancelled before it ran (Slurm keeps no record of it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from outerloop import infra
from outerloop.compute.base import JobObservation, JobState, combine_task_states

SQUEUE_FORMAT = "%i|%j|%T|%M|%P|%V|%r|%b|%l"
SACCT_FIELDS = ("JobID,JobIDRaw,JobName,State,ExitCode,ElapsedRaw,Start,End,TimelimitRaw,"
                "AllocTRES,SubmitLine")
ACCOUNTING_LAG_S = 30
"""How long after an array's last recorded end a task without any record may still
be accounting lag (Slurm sends start records every 5 s) rather than a task
cancelled before it ran."""

_QUEUE_STATES = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "CONFIGURING": JobState.RUNNING,
    "RUNNING": JobState.RUNNING,
    "RESIZING": JobState.RUNNING,
    "SUSPENDED": JobState.RUNNING,
    "STOPPED": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "COMPLETING": JobState.COMPLETING,
    "STAGE_OUT": JobState.COMPLETING,
}
_ACCT_TERMINAL = {
    "COMPLETED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "TIMEOUT": JobState.TIMEOUT,
    "DEADLINE": JobState.TIMEOUT,
    "OUT_OF_MEMORY": JobState.OUT_OF_MEMORY,
    "CANCELLED": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,
    "NODE_FAIL": JobState.NODE_FAIL,
    "BOOT_FAIL": JobState.NODE_FAIL,
    "PREEMPTED": JobState.INTERRUPTED,
}
_ATTEMPT_ENDS = frozenset({"REQUEUED", "PREEMPTED", "NODE_FAIL"})
"""Accounting words of an attempt the job outlived (Slurm requeued it): preempted, or
its node failed (``JobRequeue``)."""
_DURATION_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")
_FOLDED_RE = re.compile(r"^(\d+)_\[([0-9,\-%:]+)\]$")
_TRES_GPU_RE = re.compile(r"(?:^|,)gres/gpu(:[^=,]+)?=(\d+)")
_QUEUE_GPU_RE = re.compile(r"gpu(?::[A-Za-z0-9_.-]+)?[:=](\d+)")
_ARRAY_OPT_RE = re.compile(r"(?:^|\s)(?:--array[=\s]|-a\s?)([0-9][0-9,\-%:]*)")


@dataclass(frozen=True)
class SqueueRow:
    """One ``squeue`` row."""

    job_id: str
    name: str
    state: str
    elapsed: str = ""
    partition: str = ""
    submitted: str = ""
    reason: str = ""
    gres: str = ""
    limit: str = ""

    @property
    def elapsed_s(self) -> int:
        return parse_duration(self.elapsed)

    @property
    def gpus(self) -> int:
        """GPUs per node the job asked for (``%b``: ``gres:gpu:2``); 0 for none."""
        return queue_gpus(self.gres)


@dataclass(frozen=True)
class AcctRow:
    """One ``sacct -D -X`` row: one attempt of one job or array task."""

    job_id: str
    raw_id: str
    name: str
    state: str
    exit_code: int | None
    elapsed_s: int
    start: str = ""
    end: str = ""
    limit_minutes: int | None = None
    alloc_gpus: int = 0
    """GPUs allocated to this attempt (``AllocTRES`` ``gres/gpu=N``), all nodes."""
    submit_line: str = ""

    @property
    def state_word(self) -> str:
        """``CANCELLED by 0`` -> ``CANCELLED`` (the suffix names who cancelled)."""
        return self.state.split(" ", 1)[0].rstrip("+")


@dataclass
class Decision:
    """One job's (or task's) state as decided from its queue row and attempts."""

    state: JobState
    exit_code: int | None = None
    elapsed_s: int = 0
    reason: str | None = None
    name: str | None = None
    overrun: bool = False
    """Its attempts used more than ``infra.OVERRUN_FACTOR`` times its limit: cancel it."""
    attempts: int = 0
    gpu_seconds: int = 0


@dataclass
class Observed:
    """What one observation pass concluded, plus the jobs it says must be cut off."""

    jobs: dict[str, JobObservation] = field(default_factory=dict)
    overrun: list[str] = field(default_factory=list)


def parse_duration(text: str) -> int:
    """``0:05`` / ``1:02:03`` / ``2-00:00:00`` -> seconds; anything else -> 0."""
    match = _DURATION_RE.match(text.strip())
    if not match:
        return 0
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def parse_limit_minutes(text: str) -> int | None:
    """A limit (``%l`` or ``TimelimitRaw``) in minutes; None when unlimited/unknown."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    seconds = parse_duration(text)
    return -(-seconds // 60) if seconds else None


def parse_exit_code(text: str) -> int | None:
    """sacct ``ExitCode`` ``code:signal``: the code, or 128+signal if killed."""
    code, _, sig = text.strip().partition(":")
    if not code.isdigit():
        return None
    if sig.isdigit() and int(sig):
        return 128 + int(sig)
    return int(code)


def parse_squeue(text: str) -> list[SqueueRow]:
    """Rows of ``squeue -o SQUEUE_FORMAT``; malformed lines are skipped."""
    rows = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 9 or not parts[0]:
            continue
        job_id, name, state, elapsed, partition, submitted, reason, gres, limit = parts
        rows.append(SqueueRow(job_id=job_id, name=name, state=state, elapsed=elapsed,
                               partition=partition, submitted=submitted, reason=reason,
                               gres=gres, limit=limit))
    return rows


def parse_sacct(text: str) -> list[AcctRow]:
    """Rows of ``sacct -P -o SACCT_FIELDS``, in output order; malformed lines skipped.
    ``SubmitLine`` is last, so a ``|`` inside it stays part of it."""
    rows = []
    for line in text.splitlines():
        parts = line.strip().split("|", 10)
        if len(parts) < 9 or not parts[0]:
            continue
        job_id, raw_id, name, state, exit_code, elapsed, start, end, limit = parts[:9]
        rows.append(AcctRow(job_id=job_id, raw_id=raw_id, name=name, state=state,
                            exit_code=parse_exit_code(exit_code),
                            elapsed_s=int(elapsed) if elapsed.isdigit() else 0,
                            start=start, end=end, limit_minutes=parse_limit_minutes(limit),
                            alloc_gpus=tres_gpus(parts[9]) if len(parts) > 9 else 0,
                            submit_line=parts[10] if len(parts) > 10 else ""))
    return rows


def tres_gpus(text: str) -> int:
    """GPUs in a TRES string (``billing=1,cpu=1,gres/gpu=2,node=1``): the untyped
    ``gres/gpu`` total, else the sum of the typed ones; 0 when none."""
    total, typed = None, 0
    for match in _TRES_GPU_RE.finditer(text.strip()):
        if match.group(1):
            typed += int(match.group(2))
        else:
            total = int(match.group(2))
    return total if total is not None else typed


def queue_gpus(text: str) -> int:
    """GPUs per node in squeue's ``%b`` (``gres:gpu:2``, ``gres/gpu:a100:2``); 0 if none."""
    match = _QUEUE_GPU_RE.search(text.strip())
    return int(match.group(1)) if match else 0


def gpu_seconds(attempts: list[AcctRow], queued: SqueueRow | None) -> int:
    """Allocated GPUs x elapsed, summed over every attempt; the current attempt's
    figure takes the queue's elapsed and GPUs while accounting lags."""
    if not attempts:
        return queued.gpus * queued.elapsed_s if queued else 0
    earlier = sum(a.alloc_gpus * a.elapsed_s for a in attempts[:-1])
    last = attempts[-1]
    gpus, elapsed = last.alloc_gpus, last.elapsed_s
    if queued is not None:
        gpus = gpus or queued.gpus
        elapsed = max(elapsed, queued.elapsed_s)
    return earlier + gpus * elapsed


def submitted_tasks(submit_line: str) -> set[int]:
    """The tasks an ``sbatch --array=SPEC`` line asked for (empty if none)."""
    match = _ARRAY_OPT_RE.search(submit_line)
    return set(expand_tasks(match.group(1))) if match else set()


def parse_local_time(text: str) -> datetime | None:
    """sacct's ``Start``/``End`` (local time, no zone); None for Unknown/None."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def expand_tasks(spec: str) -> list[int]:
    """``2-3%2`` / ``1,3,5-7`` / ``0-15:4`` (an array spec) -> task numbers."""
    tasks: list[int] = []
    for part in spec.split("%", 1)[0].split(","):
        span, _, step = part.partition(":")
        first, _, last = span.partition("-")
        if first.isdigit() and (not last or last.isdigit()) and (not step or step.isdigit()):
            tasks.extend(range(int(first), int(last or first) + 1, int(step or 1) or 1))
    return tasks


def group_attempts(rows: Iterable[AcctRow]) -> dict[str, list[AcctRow]]:
    """Attempts per display id; a folded ``22_[2-3]`` row counts for each task in it."""
    groups: dict[str, list[AcctRow]] = {}
    for row in rows:
        folded = _FOLDED_RE.match(row.job_id)
        ids = ([f"{folded.group(1)}_{k}" for k in expand_tasks(folded.group(2))]
               if folded else [row.job_id])
        for job_id in ids:
            groups.setdefault(job_id, []).append(row)
    return groups


def queue_state(text: str) -> JobState | None:
    """A queue state word as a live ``JobState``; None for a terminal or odd word."""
    return _QUEUE_STATES.get(text.strip().split(" ", 1)[0])


def used_seconds(attempts: list[AcctRow], queued: SqueueRow | None) -> int:
    """Time used over all attempts: finished attempts summed, plus the current one
    (the larger of accounting's and the queue's figure, since accounting lags)."""
    if not attempts:
        return queued.elapsed_s if queued else 0
    earlier = sum(a.elapsed_s for a in attempts[:-1])
    current = attempts[-1].elapsed_s
    if queued is not None:
        current = max(current, queued.elapsed_s)
    return earlier + current


def decide(queued: SqueueRow | None, attempts: list[AcctRow]) -> Decision:
    """One job's or task's state. ``GONE`` when neither source knows it."""
    names = [a.name for a in attempts if a.name and a.name != "allocation"]
    name = queued.name if queued else (names[-1] if names else None)
    restarts = sum(1 for a in attempts[:-1] if a.state_word in _ATTEMPT_ENDS)
    used = used_seconds(attempts, queued)
    live = queue_state(queued.state) if queued else None
    if live is not None and attempts and attempts[-1].state_word in _ATTEMPT_ENDS:
        restarts += 1  # requeued, its next attempt not yet in accounting
    if live is not None and queued is not None:
        limit = parse_limit_minutes(queued.limit)
        for attempt in attempts:
            limit = attempt.limit_minutes or limit
        reason = queued.reason if live == JobState.PENDING and queued.reason not in (
            "", "None") else None
        if restarts:
            reason = f"{reason + '; ' if reason else ''}attempt {restarts + 1} " \
                     f"(requeued {restarts}x)"
        overrun = infra.is_overrun(used, limit)
        return Decision(live, None, used, reason, name, overrun, restarts + 1,
                        gpu_seconds(attempts, queued))
    if not attempts:
        return Decision(JobState.GONE, reason="no record in the queue or accounting")
    last = attempts[-1]
    word = last.state_word
    final = _ACCT_TERMINAL.get(word)
    if final is None:
        return Decision(JobState.UNKNOWN, None, used,
                        f"accounting reads {last.state} but the queue no longer lists it "
                        f"(accounting lag?)", name, attempts=restarts + 1,
                        gpu_seconds=gpu_seconds(attempts, None))
    reason = None
    if final == JobState.INTERRUPTED:
        reason = infra.PREEMPTED_REASON
    elif final == JobState.CANCELLED:
        reason = last.state
    return Decision(final, last.exit_code, used, reason, name, attempts=restarts + 1,
                    gpu_seconds=gpu_seconds(attempts, None))


def observation(job_id: str, decision: Decision) -> JobObservation:
    return JobObservation(job_id=job_id, state=decision.state, name=decision.name,
                          exit_code=decision.exit_code, elapsed_s=decision.elapsed_s,
                          gpu_seconds=decision.gpu_seconds, reason=decision.reason)


def build(job_ids: list[str], queue: list[SqueueRow], rows: list[AcctRow], now: datetime,
          cut_off: frozenset[str] = frozenset()) -> Observed:
    """Every requested id's observation from one queue listing and one accounting
    answer. ``now`` is local time without a zone, like sacct's.

    A plain id that has array tasks is an array: its state combines its tasks, the
    ones the queue or accounting shows plus the ones its submit line asked for. Ids
    in ``cut_off`` were just cancelled for overrunning: they read interrupted.
    """
    return _Builder(queue, rows, now, cut_off).build(job_ids)


class _Builder:
    def __init__(self, queue: list[SqueueRow], rows: list[AcctRow], now: datetime,
                 cut_off: frozenset[str]) -> None:
        self.by_id = {q.job_id: q for q in queue}
        self.groups = group_attempts(rows)
        self.now = now
        self.cut_off = cut_off
        self.tasks_of: dict[str, set[int]] = {}
        self.ends: dict[str, datetime] = {}
        for key in (*self.by_id, *self.groups):
            parent, sep, task = key.partition("_")
            if sep and task.isdigit():
                self.tasks_of.setdefault(parent, set()).add(int(task))
        for row in rows:
            parent = row.job_id.partition("_")[0]
            asked = submitted_tasks(row.submit_line)
            if asked:
                self.tasks_of.setdefault(parent, set()).update(asked)
            end = parse_local_time(row.end)
            if end is not None and (parent not in self.ends or end > self.ends[parent]):
                self.ends[parent] = end

    def build(self, job_ids: list[str]) -> Observed:
        out = Observed()
        for job_id in job_ids:
            parent, sep, _ = job_id.partition("_")
            if sep or parent not in self.tasks_of:
                decision = self.decide(job_id)
                if decision.overrun:
                    out.overrun.append(job_id)
                out.jobs[job_id] = observation(job_id, decision)
            else:
                out.jobs[job_id] = self.combine(job_id, out.overrun)
        return out

    def decide(self, key: str) -> Decision:
        decision = decide(self.by_id.get(key), self.groups.get(key, []))
        parent, sep, _ = key.partition("_")
        if decision.state == JobState.GONE and sep and parent in self.tasks_of:
            decision = self._unrecorded_task(parent)
        if key in self.cut_off and not decision.state.terminal:
            decision.state = JobState.INTERRUPTED
            decision.overrun = False
            decision.reason = infra.overrun_reason(decision.elapsed_s)
        return decision

    def _unrecorded_task(self, parent: str) -> Decision:
        """A task of a known array that neither source lists: cancelled before it ran
        (Slurm keeps no record of that), unless a sibling is still queued or the
        array ended so recently that its record may still be on its way."""
        if any(k.partition("_")[0] == parent for k in self.by_id):
            return Decision(JobState.UNKNOWN, reason="no accounting record yet")
        last_end = self.ends.get(parent)
        if last_end is None or (self.now - last_end).total_seconds() < ACCOUNTING_LAG_S:
            return Decision(JobState.UNKNOWN, reason="no accounting record yet")
        return Decision(JobState.CANCELLED, reason="array task left the queue without an "
                        "accounting record: cancelled before it ran")

    def combine(self, job_id: str, overrun: list[str]) -> JobObservation:
        decisions = {}
        for k in sorted(self.tasks_of[job_id]):
            key = f"{job_id}_{k}"
            decisions[k] = self.decide(key)
            if decisions[k].overrun:
                overrun.append(key)
        state = combine_task_states([d.state for d in decisions.values()])
        first = next((d for d in decisions.values() if d.state == state), None)
        names = [d.name for d in decisions.values() if d.name]
        return JobObservation(
            job_id=job_id, state=state, name=names[0] if names else None,
            exit_code=0 if state == JobState.COMPLETED else (first.exit_code if first else None),
            elapsed_s=sum(d.elapsed_s for d in decisions.values()),
            gpu_seconds=sum(d.gpu_seconds for d in decisions.values()),
            reason=next((d.reason for d in decisions.values() if d.reason), None),
            tasks={k: d.state for k, d in decisions.items()},
            task_elapsed_s={k: d.elapsed_s for k, d in decisions.items()},
        )


SBATCH_UNANSWERED = ("timed out", "time out", "timeout", "unable to contact", "connect",
                     "communication", "unreachable", "zero bytes", "standby",
                     "temporarily", "try again", "slurm_persist", "no route", "broken pipe",
                     "reset by peer", "interrupted system call")
"""Words of an sbatch failure that say the controller did not answer in time: the job
may exist (Slurm often creates it and the answer is what got lost)."""
SBATCH_REFUSALS = ("invalid", "unrecognized option", "unknown option", "unrecognised option",
                   "violates accounting/qos policy", "not available", "permission denied",
                   "access denied", "not permitted", "not allowed", "exceeds", "too large",
                   "presently disabled", "dependency", "unable to open", "no such file",
                   "more processors requested", "requested node configuration",
                   "node count specification", "is not a valid", "must be",
                   "submit limit")
"""Words of an sbatch failure that say Slurm (or sbatch itself, parsing its options)
refused the job: no job was created, and trying again asks the same."""


def sbatch_refused(message: str) -> bool:
    """Whether an sbatch that exited non-zero with ``message`` clearly refused the job.

    False means the outcome is unknown: the controller may have created the job and
    lost the answer (``Socket timed out on send/recv operation``, an unreachable
    controller, an empty or unrecognised message), so the caller must look the job up
    by name before any retry. A transport word wins over a refusal word (``Unable to
    contact slurm controller (connect failure)`` is not a refusal)."""
    words = " ".join(message.lower().split())
    if not words or any(w in words for w in SBATCH_UNANSWERED):
        return False
    return any(w in words for w in SBATCH_REFUSALS)
