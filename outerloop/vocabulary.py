"""The words outerloop records of its jobs and its gate, written once.

Each vocabulary is a ``StrEnum``: a member compares, hashes, formats and serialises as
its value, so ledger lines, intents, ``status --json`` and the board read byte for byte
as they did when these were plain strings, and old ledgers fold unchanged. Every other
module compares against these members and the groups below, never against the strings
(``tests/unit/test_vocabulary.py`` reads the source for it).

A word this version does not know (a newer version wrote it) is kept as written where
the ledger holds it, never an error: a verdict or a purpose through ``_missing_``, as
``ledger.records.Ending`` does; a job's recorded state through ``JobState.recorded``
(the scheduler's own answers stay strict: a backend maps them, see ``compute/``).

Imports nothing of outerloop: the compute seam, the intents and the ledger's events all
sit above it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

_E = TypeVar("_E", bound=StrEnum)


def _kept(cls: type[_E], value: object) -> _E | None:
    """A member of ``cls`` standing for ``value``, a word it does not know: equal to the
    string, in no group, so whatever tests a group treats it as nothing it knows."""
    if not isinstance(value, str):
        return None
    member = str.__new__(cls, value)
    member._name_ = value
    member._value_ = value
    return member


class JobState(StrEnum):
    """A job's state: as a backend observes it (``compute.base.JobObservation``) and as
    the ledger records it (``job_ended``, ``ledger.records.JobRecord``)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETING = "completing"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out_of_memory"
    CANCELLED = "cancelled"
    NODE_FAIL = "node_fail"
    INTERRUPTED = "interrupted"
    GONE = "gone"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        """The scheduler says the job ended. ``GONE`` (it has no record) is not an end:
        a job can be missing from a query and still run."""
        return self in TERMINAL_STATES

    @property
    def active(self) -> bool:
        return self in ACTIVE_STATES

    @classmethod
    def recorded(cls, value: str) -> JobState:
        """The state a ledger line holds: a member, or (a newer version's word) the word
        kept as written, over for nothing and active for nothing."""
        try:
            return cls(value)
        except ValueError:
            kept = _kept(cls, value)
            assert kept is not None
            return kept


# The groups. What the ledger holds may still be a plain string (a fold cache written
# before these were enums, an event built by hand): test a group with ``in``, which
# compares the same either way.

TERMINAL_STATES = frozenset({
    JobState.COMPLETED, JobState.FAILED, JobState.TIMEOUT, JobState.OUT_OF_MEMORY,
    JobState.CANCELLED, JobState.NODE_FAIL, JobState.INTERRUPTED})
"""The scheduler says the job ended (``JobState.terminal``)."""
ACTIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING, JobState.COMPLETING})
OVER_STATES = TERMINAL_STATES | {JobState.GONE}
"""Over, for the ledger (``JobRecord.terminal``): an end the scheduler reported, or
``GONE`` as the sweep records it, only past a deadline ("no record" alone is no end)."""


class GateVerdict(StrEnum):
    """What the gate decided of a submission (``attempt/gate.py``), as the ledger's
    ``verdict`` event holds it and every view shows it."""

    IMPROVED = "improved"
    """Credited."""
    NO_IMPROVEMENT = "no-improvement"
    EVAL_ERROR = "eval-error"
    SUITE_REGRESSION = "suite-regression"
    """Credited on its own benchmark, but a sibling of the suite got worse."""
    MORE_PAIRS = "more-pairs"
    """Not a verdict, never recorded: the sequential test asks for more pairs first."""

    @property
    def credited(self) -> bool:
        return self == GateVerdict.IMPROVED

    @classmethod
    def _missing_(cls, value: object) -> GateVerdict | None:
        return _kept(cls, value)


SETTLED_VERDICTS = frozenset({GateVerdict.IMPROVED, GateVerdict.NO_IMPROVEMENT,
                              GateVerdict.SUITE_REGRESSION})
"""The gate judged the work itself (not an eval error): the same tree submitted again
would measure nothing new."""
class ResultStanding(StrEnum):
    """Where a credited result (an ``improved`` verdict) stands: what the board and
    ``status.json`` count it as (``ledger/standing.py`` decides). Only ``merged`` counts
    as progress: the best line and the headline best are merged results' alone."""

    MERGED = "merged"
    """Its run's pull request merged with this candidate."""
    OPEN = "open"
    """Credited and published (or about to be), its pull request not merged yet."""
    BLOCKED = "blocked"
    """The review blocked it (a blocking or tamper finding, or a degraded review): its
    pull request is a draft, or the agent was sent back to revise it."""
    UNMERGED = "not-merged"
    """Credited, but its run ended without merging it (rejected, withdrawn, stale...)."""
    SUPERSEDED = "superseded"
    """A later credited submission of the same run replaced it on the pull request."""

    @property
    def counts(self) -> bool:
        """Progress: the best so far is merged results' alone."""
        return self == ResultStanding.MERGED

    @classmethod
    def _missing_(cls, value: object) -> ResultStanding | None:
        return _kept(cls, value)


IN_PROCESS_MARK = "in-process"
"""Beside a verdict measured without a trusted scorer (``attempt/in_process.py``): the
number came from the candidate's own process."""


class JobPurpose(StrEnum):
    """Why the kernel submitted a job (``submit_job``'s ``purpose``)."""

    CLIMB = "climb"
    """A run's first leg: ``attempt start``."""
    WAKE = "wake"
    RECOVER = "recover"
    """A leg again after its job died."""
    RETRY = "retry"
    """A leg delivered again after the machine's failure (a full disk): not a recovery."""
    LAUNCH = "launch"
    """The agent's experiment."""
    EVAL = "eval"
    """One side of an eval pair."""
    ARCHIVE = "archive"

    @classmethod
    def _missing_(cls, value: object) -> JobPurpose | None:
        return _kept(cls, value)


LEG_PURPOSES = frozenset({JobPurpose.CLIMB, JobPurpose.WAKE, JobPurpose.RECOVER,
                          JobPurpose.RETRY})
"""A run's leg jobs: each runs ``attempt start|wake``."""
GPU_PURPOSES = frozenset({JobPurpose.LAUNCH, JobPurpose.EVAL})
"""The jobs that hold GPUs counted against a target's ceiling (``budgets``)."""
