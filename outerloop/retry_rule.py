"""The one rule for every step the kernel retries (issue 48): why a step failed, when it
is tried again, and when it waits on a human.

A step is an effect the executor performs under an intent (a post, a PR, a job, a
close...). An *unknown* outcome (the forge or the scheduler could not be asked) keeps
its intent pending and is reconciled at the next tick; this module is about the other
kind, a *definite* failure (a ``failed`` event), which records its ``Cause``:

- ``transient``: it may pass by itself (a race with another writer, a 5xx answered
  for sure): tried again after ``backoff_s`` (1 min doubling to 30 min);
- ``rights``, ``moved``, ``conflict``: only a person can remove it (a refused token or
  App permission, a branch someone else moved, a conflict). The step *waits on a human*
  at once: ``status``, the board and ``doctor`` name the cause and the fix, the run's
  issue is told once, and the step is tried again every ``[limits]
  human_retry_minutes`` (``HUMAN_RETRY_S`` by default), so it goes on by itself once
  the cause is gone;
- ``failed``: a refusal whose cause is not known (also every ``failed`` line written
  before issue 48): backed off like a transient one, and after ``QUICK_TRIES`` failures
  it waits on a human too.

No step is dropped (the old rule stopped after three failures, silently) and none is
tried in a tight loop. Pure: the fold records the causes, the lanes ask ``due``, the
views ask ``needs_human``.
"""

from __future__ import annotations

from enum import StrEnum

from outerloop.errors import ForgeRefused, ForgeUnavailable


class Cause(StrEnum):
    TRANSIENT = "transient"
    RIGHTS = "rights"
    MOVED = "moved"
    CONFLICT = "conflict"
    FAILED = "failed"

    @classmethod
    def recorded(cls, text: str) -> Cause:
        """The cause a ``failed`` line holds; an empty or unknown word is ``failed``."""
        try:
            return cls(text)
        except ValueError:
            return cls.FAILED


HUMAN_CAUSES = frozenset({Cause.RIGHTS, Cause.MOVED, Cause.CONFLICT})
"""Causes only a person can remove."""
QUICK_TRIES = 3
"""Failures of an unknown cause after which the step waits on a human."""
PATIENT_TRIES = 8
"""Failures of a transient cause after which it is not taken to pass by itself
(~1.5 h of backoff)."""
RETRY_FIRST_S = 60.0
RETRY_MAX_S = 1800.0
HUMAN_RETRY_S = 600.0
"""While a step waits on a human it is tried again this often (not every tick): the
default of ``[limits] human_retry_minutes``, which callers pass as ``human_s``."""
MAX_FRESH_BRANCHES = 3
"""A credited candidate whose branch someone else moved is published on a fresh branch
(``<branch>-2``, ``-3``...; ``lanes/followup``) at most this many times; past that its
push waits on a human."""
STALE_RETRIES = 4
"""A wait whose step was not tried for this many retry intervals is no longer shown:
the lanes stopped planning it (superseded: a newer candidate, a settled run). A step
still wanted is tried every interval and so stays fresh while ticks run."""
STALE_AFTER_S = STALE_RETRIES * HUMAN_RETRY_S


def stale_after_s(human_s: float = HUMAN_RETRY_S) -> float:
    """How long after its last try a wait is no longer shown (``STALE_RETRIES``)."""
    return STALE_RETRIES * human_s


def backoff_s(failures: int, first_s: float, max_s: float) -> float:
    """The one doubling schedule: 0 before any failure, then ``first_s``, twice that
    after each further failure, never more than ``max_s``. Starts (``lanes/starting``),
    dependency warms (``lanes/deps``) and every step use it."""
    if failures <= 0:
        return 0.0
    return min(max_s, first_s * 2.0 ** min(failures - 1, 32))


def cause_of(exc: BaseException) -> Cause:
    """The cause of a refusal the executor met: a ``ForgeRefused`` names its own; an
    unreachable or rate-limiting forge may pass; anything else (a 404, a 422, git's own
    words, a local ``OSError``) is ``failed``."""
    if isinstance(exc, ForgeRefused):
        return Cause.recorded(exc.cause)
    if isinstance(exc, ForgeUnavailable):
        return Cause.TRANSIENT
    return Cause.FAILED


def needs_human(failures: int, cause: Cause) -> bool:
    """Whether a step that failed ``failures`` times, last for ``cause``, waits on a
    human (it is still tried, slowly)."""
    if failures <= 0:
        return False
    if cause in HUMAN_CAUSES:
        return True
    return failures >= (PATIENT_TRIES if cause == Cause.TRANSIENT else QUICK_TRIES)


def retry_delay_s(failures: int, cause: Cause, human_s: float = HUMAN_RETRY_S) -> float:
    """How long after its latest failure a step is tried again (``human_s`` while it
    waits on a human)."""
    if failures <= 0:
        return 0.0
    if needs_human(failures, cause):
        return human_s
    return backoff_s(failures, RETRY_FIRST_S, RETRY_MAX_S)


_WORDS = {
    Cause.RIGHTS: "the forge refused the kernel's rights",
    Cause.MOVED: "the branch was moved by someone else (fast-forward only: outerloop "
                 "never overwrites another's commits)",
    Cause.CONFLICT: "the forge reports a conflict",
    Cause.TRANSIENT: "the forge kept failing",
    Cause.FAILED: "it kept failing",
}

_FIXES = {
    Cause.RIGHTS: "give the kernel's token (or GitHub App) the rights this step needs "
                  "(pull requests and issues: write; contents: write), or put a valid "
                  "token in the [forge] token_file",
    Cause.MOVED: "move the branch back, or merge the kernel's candidate by hand; "
                 "outerloop never overwrites another's commits",
    Cause.CONFLICT: "resolve the conflict on the forge",
    Cause.TRANSIENT: "check the forge's status and the network from the tick host",
    Cause.FAILED: "read the error (`outerloop explain RUN`) and fix what it names",
}


def cause_words(cause: Cause) -> str:
    """What a person reads for ``cause`` (status, the board, doctor, the issue)."""
    return _WORDS[cause]


def fix_for(cause: Cause) -> str:
    """The fix a person applies for ``cause``; outerloop goes on by itself after it."""
    return _FIXES[cause]
