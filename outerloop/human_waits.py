"""Steps waiting on a human (issue 48): what ``status``, the board, ``doctor`` and the
lane that tells the run's issue read, from the folded failures and ``retry_rule``.

A step waits on a human while its latest failures say so (``retry_rule.needs_human``)
and it is still being tried (its latest failure is at most ``stale_after_s`` old: a
step the lanes stopped planning, superseded by a newer candidate, is not shown). Not
shown either: a run's start (``lanes/starting`` gives its own account, its own issue
comment), and a push refused on a branch someone else moved while the run still has a
fresh branch to publish on (``lanes/followup`` does that by itself). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from outerloop.clock import parse_stamp, stamp
from outerloop.effects import OpenPR, PushLine
from outerloop.ledger.state import State, StepFailures
from outerloop.line_paths import FRESH_LINES
from outerloop.retry_rule import (
    HUMAN_RETRY_S,
    MAX_FRESH_BRANCHES,
    Cause,
    cause_words,
    fix_for,
    needs_human,
    stale_after_s,
)

_STEP_WORDS = {
    "open_pr": "opening its pull request",
    "fetch_base": "fetching the base branch that moved since its verdict",
    "post_comment": "a post",
    "edit_comment": "keeping a status comment current",
    "open_issue": "opening an issue",
    "close_issue": "closing an issue or pull request",
    "submit_job": "submitting a job",
    "cancel_job": "cancelling a job",
    "publish_record": "the research-log record",
}


@dataclass(frozen=True)
class HumanWait:
    key: str
    run: str | None
    target: str
    kind: str
    cause: Cause
    failures: int
    error: str
    since: str
    next_try_at: str

    @property
    def step(self) -> str:
        return _STEP_WORDS.get(self.kind, self.kind or "a step")

    @property
    def words(self) -> str:
        """``opening its pull request: the forge refused the kernel's rights``."""
        return f"{self.step}: {cause_words(self.cause)}"

    @property
    def fix(self) -> str:
        return fix_for(self.cause)

    def line(self) -> str:
        """One line for ``status`` and ``doctor``."""
        who = f"run {self.run}" if self.run else self.target
        return (f"{who}: {self.words} ({self.failures} tries since {self.since[:19]}Z; "
                f"next try at {self.next_try_at[:19]}Z)")

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "run": self.run, "target": self.target, "step": self.step,
                "cause": str(self.cause), "words": self.words, "fix": self.fix,
                "failures": self.failures, "since": self.since,
                "next_try_at": self.next_try_at, "error": self.error}


def _handled(state: State, failed: StepFailures) -> bool:
    """A push refused on a moved branch the followup lane republishes by itself, or a
    line's push the lines lane saves on a fresh branch by itself."""
    if failed.cause != Cause.MOVED:
        return False
    run = state.runs.get(failed.run) if failed.run else None
    if run is not None and failed.kind == PushLine.__struct_config__.tag:
        return run.line is not None and len(run.line.moved) <= FRESH_LINES
    if failed.kind != OpenPR.__struct_config__.tag:
        return False
    return run is not None and len(run.moved_heads) <= MAX_FRESH_BRANCHES


def human_waits(state: State, now: datetime | None = None,
                retry_s: float = HUMAN_RETRY_S) -> list[HumanWait]:
    """Every step waiting on a human, oldest first; ``now`` (None: the latest ledger
    event) decides which are still tried; ``retry_s``: ``[limits] human_retry_minutes``
    in seconds, how often such a step is tried."""
    as_of = now or (parse_stamp(state.last_at) if state.last_at else None)
    found = []
    for key, failed in state.failures.items():
        if failed.start or not needs_human(failed.count, failed.cause) or \
                _handled(state, failed):
            continue
        last = parse_stamp(failed.last_at)
        if as_of is not None and (as_of - last).total_seconds() > stale_after_s(retry_s):
            continue
        run = state.runs.get(failed.run) if failed.run else None
        found.append(HumanWait(
            key=key, run=failed.run, target=failed.target or (run.target if run else ""),
            kind=failed.kind, cause=failed.cause, failures=failed.count,
            error=failed.error, since=failed.first_at,
            next_try_at=stamp(last + timedelta(seconds=retry_s))))
    return sorted(found, key=lambda w: (w.since, w.key))


def run_waits(state: State, run_id: str, now: datetime | None = None,
              retry_s: float = HUMAN_RETRY_S) -> list[HumanWait]:
    """The steps of run ``run_id`` waiting on a human."""
    return [w for w in human_waits(state, now, retry_s) if w.run == run_id]
