"""What one tick observed of the outside world (data only; ``observe.py`` gathers it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from outerloop.compute.base import JobObservation
from outerloop.contract import Contract
from outerloop.deps.store import DepsObservation
from outerloop.forge.base import Comment, Issue, LabelEvent, PullRequest, Review, ReviewComment
from outerloop.infra import Space

if TYPE_CHECKING:
    from outerloop.harness.probe import ProbeResult  # urllib, threads: for the lane that probes


@dataclass
class PullObservation:
    pr: PullRequest
    comments: list[Comment] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    review_comments: list[ReviewComment] = field(default_factory=list)


@dataclass
class TargetObservation:
    repo: str
    contract: Contract | None = None
    """The target's contract, when it validated."""
    contract_error: str | None = None
    contract_problems: list[str] = field(default_factory=list)
    """Each of the contract's errors on its own (``path: problem``) when it failed."""
    default_branch: str | None = None
    base_sha: str | None = None
    issues: list[Issue] = field(default_factory=list)
    label_events: dict[int, list[LabelEvent]] = field(default_factory=dict)
    pulls: dict[int, PullObservation] = field(default_factory=dict)
    claim_markers: dict[int, int] = field(default_factory=dict)
    """Per issue the ledger would let intake claim: how many of the kernel's own claim
    markers it carries (claims counted from the forge, as the reference counts them)."""
    claimed_by: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """The same issues: the run ids those claim markers name (a run the ledger does not
    hold was lost by a restore: intake does not claim its issue again)."""
    published: dict[str, int] = field(default_factory=dict)
    """Per run waiting to publish while the base branch moved: the kernel's pull request
    the forge already shows for its candidate (any state; a home restored from before
    the PR opened), which the tick records instead of measuring it again."""
    issue_comments: dict[int, list[Comment]] = field(default_factory=dict)
    """Per issue of an active run whose thread changed since the run last read it
    (``RunRecord.issue_comments_cursor``): its comments since then (``lanes/steering``)."""
    error: str | None = None
    deps: DepsObservation | None = None
    """The dependency cache of the contract's lock (None: the contract names none)."""


@dataclass
class Observations:
    now: datetime
    jobs: dict[str, JobObservation] = field(default_factory=dict)
    compute_error: str | None = None
    targets: dict[str, TargetObservation] = field(default_factory=dict)
    space: list[Space] = field(default_factory=list)
    """Each filesystem a run's jobs write (the home, its ``runs/`` and ``jobs/`` when
    elsewhere), as ``statvfs`` saw it this tick."""
    no_space: dict[str, str] = field(default_factory=dict)
    """Per ended leg job whose stderr tail names a full disk or quota: that line."""
    deployment: dict[str, str] = field(default_factory=dict)
    """Per ended leg job the deployment stopped (``infra.says_deployment``): its line."""
    crashed: dict[str, str] = field(default_factory=dict)
    """Per ended leg job whose stderr ends in a Python traceback: the exception's name
    (``infra.crash_name``), which the sweep's reason for giving a run up names."""
    endpoints: dict[str, ProbeResult] = field(default_factory=dict)
    """Per model endpoint with a probe that active runs use (or that is down): what this
    tick's probe saw (``harness/probe.py``)."""
