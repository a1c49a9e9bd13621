"""The typed state the ledger folds into (records only; ``fold.py`` builds them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from outerloop.agent_tool import layout
from outerloop.effects import Effect, Unreadable
from outerloop.ledger import events as ev
from outerloop.retry_rule import Cause
from outerloop.vocabulary import OVER_STATES, JobPurpose, JobState


class RunState(StrEnum):
    """Where a run is. A ``StrEnum``: it compares, formats and serialises as its value,
    so ``status --json`` and the board print what they printed as plain strings."""

    QUEUED = "queued"
    RUNNING = "running"
    PARKED = "parked"
    ENDED = "ended"


class ParkReason(StrEnum):
    """What a parked run waits for: its jobs, its eval jobs, a review (its PR is open),
    or the tick to publish its credited candidate."""

    JOBS = "jobs"
    EVAL = "eval"
    REVIEW = "review"
    PUBLISH = "publish"


class Ending(StrEnum):
    """How a run ended (``run_ended``). An ending this version does not know (a newer
    version wrote it) is kept as written, never an error: see ``_missing_``."""

    MERGED = "merged"
    REJECTED = "rejected"
    NEGATIVE_RESULT = "negative-result"
    BUDGET_EXHAUSTED = "budget-exhausted"
    ABORTED = "aborted"
    STUCK = "stuck"
    OPERATOR = "operator"
    WITHDRAWN = "withdrawn"
    """The agent closed its own pull request (``stop --withdraw REASON``)."""

    @classmethod
    def _missing_(cls, value: object) -> Ending | None:
        if not isinstance(value, str):
            return None
        member = str.__new__(cls, value)
        member._name_ = value
        member._value_ = value
        return member


_ENDED = RunState.ENDED
"""Bound once: looking a member up on its enum costs ~0.1 µs on Python 3.11, and
``RunRecord.ended`` is read for every event folded and by every lane."""


@dataclass(slots=True, frozen=True)
class FeedbackEntry:
    """A reviewer's words waiting for the agent (from a ``feedback`` event, or the
    review of a revision the tick held back)."""

    author: str
    text: str
    at: str
    kind: str = "comment"
    """What it is: ``comment``, ``review``, ``review comment``, ...: shown to the agent."""
    where: str = ""
    """File and line of a review comment; empty otherwise."""

    @property
    def from_operator(self) -> bool:
        """An operator's message (``outerloop message``), not a reviewer's words."""
        return self.kind == OPERATOR_MESSAGE


OPERATOR_MESSAGE = "operator message"
"""The ``feedback`` kind of an operator's message: it waits and is delivered at the
run's next leg the way a reviewer's words are, but is shown as the operator's."""
OPERATOR_PREFIX = "operator-"
"""An operator message's ``source_id`` begins so: ``operator-<key>``."""


PANEL_AUTHOR = "outerloop review panel"
"""Who the findings a blocked candidate goes back to its agent with are from (the
judges' and the tamper check's words, delivered as feedback)."""


def revision_feedback(asked: ev.RevisionAsked) -> FeedbackEntry:
    """The review's findings as the feedback the agent's next wake shows (fenced there:
    a judge's words are untrusted), blocking ones first."""
    ordered = sorted(asked.findings, key=lambda f: f.severity != "blocking")
    parts = []
    for finding in ordered:
        where = finding.file + (f":{finding.line}" if finding.line and finding.file else "")
        head = f"[{finding.severity}] from {finding.source or 'review'}" + (
            f" at {where}" if where else "")
        parts.append(f"{head}: {finding.summary}" + (
            f"\n{finding.detail}" if finding.detail else ""))
    return FeedbackEntry(author=PANEL_AUTHOR, text="\n\n".join(parts), at=asked.at,
                         kind=f"review of submission {asked.submission}")


BASE_AUTHOR = "outerloop"


def base_conflict_feedback(moved: ev.BaseMoved, at: str) -> FeedbackEntry:
    """What the agent is told when its credited candidate conflicts with the moved base:
    the paths, where the new base is, and that its next submission is measured against
    it (a revision: no pull request opened for a candidate that conflicts)."""
    files = "\n".join(f"- {path}" for path in moved.conflicts)
    return FeedbackEntry(author=BASE_AUTHOR, at=at, kind="base moved", text=(
        f"The base branch moved to {moved.base[:12]} after your candidate was credited, "
        f"and your candidate conflicts with it in:\n{files}\n\nNo pull request was "
        f"opened. Rebase as a revision: bring the new base in (`git fetch "
        f"{layout.rel(layout.BASE_BUNDLE)} {layout.BASE_REF} && git merge FETCH_HEAD`), "
        f"resolve the "
        f"conflicts, "
        f"and submit again; the gate measures the revision against the new base."))


RequestJson = ev.RequestJson
"""A leg's committed request as the ledger holds it (``leg_ended``'s ``request``)."""


@dataclass(slots=True)
class JobRecord:
    job_id: str
    name: str
    purpose: JobPurpose
    run: str | None
    target: str | None
    launch: str | None
    submitted_at: str
    submitted_lc: int = 0
    """The logical clock of its registration: orders jobs whatever the wall clocks say."""
    order: tuple[int, str, str, int] = (0, "", "", 0)
    """Its registration's place in the fold's order (``fold.order_of``)."""
    state: JobState = JobState.PENDING
    exit_code: int | None = None
    elapsed_s: int = 0
    task_elapsed_s: dict[int, int] = field(default_factory=dict)
    """An array's tasks: each one's own elapsed (``elapsed_s`` is their sum)."""
    ended_at: str | None = None
    gpus: int = 0
    """GPUs it holds at most at once (per task x concurrent tasks x nodes)."""
    gpu_seconds: int = 0
    """Charged when it ended (``job_ended``)."""
    run_minutes: int = 0
    """How long it may take once started (``JobSpec.run_minutes``); 0: not known."""

    @property
    def terminal(self) -> bool:
        """Over, for the ledger (``JobState.over``): ``gone`` too, which only the sweep
        records, past a deadline."""
        return self.state in OVER_STATES


@dataclass(slots=True)
class PendingIntent:
    file: str
    key: str
    action: Effect | Unreadable
    at: str


@dataclass(slots=True)
class StepFailures:
    """A step's definite failures since it was last done (``failed`` events): how many,
    the latest cause and error, when (``retry_rule`` decides from them when it is tried
    again and whether it waits on a human)."""

    count: int
    cause: Cause
    error: str
    first_at: str
    last_at: str
    run: str | None = None
    target: str = ""
    kind: str = ""
    """The effect's kind (``open_pr``, ``post_comment``...; empty: its intent unknown)."""
    start: bool = False
    """A run's start (its workspace, its climb job): ``lanes/starting`` accounts for it."""


@dataclass(slots=True)
class LineRecord:
    """A run's research line: the slot's forge branch, where the run's sessions started
    (the line with the base merged in), the merge's conflicts, the latest line commit
    the run's job saved (``line_saved``) and the latest one pushed (``PushLine``)."""

    branch: str
    start: str
    conflicts: list[str] = field(default_factory=list)
    head: str = ""
    pushed: str = ""
    withheld: list[str] = field(default_factory=list)
    """Paths the latest save left at their previous version: they held a secret."""
    refused: list[str] = field(default_factory=list)
    """Memory files the latest save left so: not regular files, or too big."""
    moved: list[str] = field(default_factory=list)
    """Line branches a push was refused on because a person rewrote them
    (``BranchMoved``): the line goes to a fresh branch (``lanes/lines.line_head``)."""

    @property
    def unpushed(self) -> bool:
        return self.head != self.pushed


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
    state: RunState = RunState.QUEUED
    park_reason: ParkReason | None = None
    """While parked: what the run waits for."""
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
    max_leg_cost_usd: float = 0.0
    """The costliest leg's ``cost_usd``: what the next leg is assumed to cost (``money``)."""
    gpu_seconds: int = 0
    """GPU time charged to the run: every ended job of it (``job_ended``)."""
    ending: Ending | None = None
    end_reason: str = ""
    """Why the run ended, one line (``run_ended.reason``; empty for old lines)."""
    withdrawn: str = ""
    """The agent's reason for withdrawing its pull request (ending ``withdrawn``)."""
    ended_at: str | None = None
    ended_order: tuple[int, str, str, int] | None = None
    """Where the ending sits in the fold's order: the first ``run_ended`` wins."""
    report: str = ""
    takeaway: str = ""
    """The title line of the agent's report its final report quotes
    (``text.agent_report_title``, at ``run_ended``); kept when the run settles: later
    briefs list what it tried."""
    refused: str = ""
    """The gist of the kernel's latest refusal of the agent's request
    (``leg_started.refused``)."""
    verdicts: list[ev.Verdict] = field(default_factory=list)
    publish: ev.PublishReady | None = None
    """The credited candidate the tick publishes (cleared when a revision is held)."""
    revision: ev.RevisionAsked | None = None
    """The review's latest ask to revise a blocked candidate, while no PR has opened
    since (cleared by ``publish_ready``): the draft waiting if the agent cannot revise."""
    revisions: int = 0
    """How many times the review sent a blocked candidate back to the agent."""
    blocked: str = ""
    """Why the review blocked the run's latest credited candidate (its blocking or
    tamper findings, or a degraded review: ``standing.blocked_why``), while it stands:
    set by a ``publish_ready`` that is a draft and by a ``revision_asked``, cleared by a
    ``publish_ready`` that is not. Kept when the run settles: the board never counts a
    blocked candidate as progress (``ledger/standing.py``)."""
    rebase_to: str | None = None
    """The moved base fetched into the kernel's clone for the credited candidate waiting
    to be published (``FetchBase`` done): its job merges the candidate onto it."""
    rebased: ev.BaseMoved | None = None
    """The latest merge of a credited candidate onto a moved base (``base_moved``): clean,
    re-measured as a new submission; conflicting, the agent rebases."""
    texts: dict[str, str] = field(default_factory=dict)
    """The run's texts a later one may cite (``ledger/cites.py``), by hash: its
    hypothesis, the reports its agent submitted, its pull request bodies. Kept until
    the run is settled; only ever added to."""
    pr_number: int | None = None
    pr_head: str | None = None
    published_sha: str | None = None
    moved_heads: list[str] = field(default_factory=list)
    """Branches a push of its candidate was refused on because someone else moved them
    (``BranchMoved``): the candidate is published on a fresh branch instead
    (``lanes/followup``), the moved one keeps that person's commits."""
    feedback: dict[str, FeedbackEntry] = field(default_factory=dict)
    delivered: set[str] = field(default_factory=set)
    outbox: dict[str, str] = field(default_factory=dict)
    posted: set[str] = field(default_factory=set)
    claim_no: int = 1
    seat: str = ""
    """The slot's harness and model at the claim (``RunQueued.seat``); empty before."""
    combines: list[int] = field(default_factory=list)
    """The pull requests whose wins this run combines (``RunQueued.combines``)."""
    start_failures: int = 0
    """Failed attempts to start it (its workspace or its climb job's submission): the
    machine's failures, never the agent's, so they cost the issue no claim; the start
    is retried with backoff (``kernel/lanes/starting.py``)."""
    start_failed_since: str = ""
    """When the first of them failed."""
    start_failed_at: str = ""
    """When the latest of them failed."""
    start_error: str = ""
    """The latest one's error (the operator's: ``status``, never the issue)."""
    last_activity_at: str = ""
    """The kernel's time of the latest activity (the stale deadline counts from it);
    never a bound on what is read from the forge (``feedback_cursor``)."""
    comments_cursor: str = ""
    """The newest ``updated_at`` of the PR's comments the forge returned (its own
    stamp; ``feedback_cursor`` events): the next read asks since it, minus an overlap."""
    review_comments_cursor: str = ""
    """The same for the PR's review comments (their ``created_at``)."""
    issue_comments_cursor: str = ""
    issue_thread_settled: bool = False
    """The last read of the issue found nothing newer than the cursor
    (``feedback_cursor.issue_thread_settled``): read again only past it."""
    """The same for the run's issue (``lanes/steering.py``): the newest ``updated_at``
    of its comments, or of the issue, at the last read."""
    base_sha: str | None = None
    branch: str | None = None
    line: LineRecord | None = None
    """The run's research line (its benchmark has ``lines`` on; ``run/lines.py``)."""
    session_id: str | None = None
    leg_open: bool = False
    pending_request: RequestJson | None = None
    """A leg's committed request not yet acted on (a crash in between)."""
    pending_error: str | None = None
    park_jobs: list[str] = field(default_factory=list)
    park_seal: str | None = None
    park_evals: list[ev.EvalPair] = field(default_factory=list)
    park_left_out: list[str] = field(default_factory=list)
    launches: list[ev.Launched] = field(default_factory=list)
    submissions: int = 0
    seeds: dict[int, list[int]] = field(default_factory=dict)
    salts: dict[int, str] = field(default_factory=dict)
    """Each submission's secret salt (``SeedsDrawn.salt``): its pair jobs' names, order
    and confirmation seed."""
    park_confirm: bool = False
    """The park waits on the confirmation pair of a credited submission (earlier
    versions)."""
    park_look: int = 0
    """Which look of the submission's sequential test the park's eval pairs are for."""
    park_first_pair: int = 0
    """The submission's index of the park's first own pair."""
    looks: dict[int, list[ev.GateLook]] = field(default_factory=dict)
    """Each submission's looks of the sequential test, in order."""
    trees: dict[int, str] = field(default_factory=dict)
    """Each submission's submitted tree (``SeedsDrawn.tree``)."""
    changes: dict[int, str] = field(default_factory=dict)
    """Each submission's change key (``SeedsDrawn.change``), copied onto its verdict."""
    alpha_fixed: ev.RunAlpha | None = None
    """The run's share of its target's false-credit budget, fixed at admission (the
    first ``run_alpha`` on record; None: admitted before it existed)."""
    looked: bool = False
    """A look of its sequential test is on record: it holds its share for good."""
    judged_changes: list[tuple[str, int, str]] = field(default_factory=list)
    """(change key, submission, verdict) of each submission the gate settled: kept when
    the run settles (its other verdicts are not), so a repeat on the target is told."""
    confirmations: dict[int, ev.Confirmation] = field(default_factory=dict)
    empty_legs: int = 0
    empty_sleeps: int = 0
    """Legs in a row that committed ``sleep`` with nothing staged (no launch, no
    submission): a leg that staged one resets it, a leg that committed nothing leaves it
    (``attempt/request.py``: ``MAX_EMPTY_SLEEPS_IN_A_ROW`` of them end the run)."""
    verdict_untold: bool = False
    """The latest verdict sends the agent back to work and no leg that showed it has
    ended: a wake killed mid-leg leaves it for the recovery leg to tell again."""
    infra_wait: ev.InfraWait | None = None
    """The latest wait on the machine (a leg job died of a full disk or quota); in
    force while its job is the run's latest leg job (``kernel/lanes/machine.py``)."""
    endpoint_wait: ev.EndpointWait | None = None
    """The latest wait on a model endpoint that is down (``kernel/lanes/endpoints.py``);
    in force while its job is the run's latest leg job."""
    leg_endpoint: str = ""
    """The endpoint of the run's latest leg (``leg_started.endpoint``)."""
    leg_refused: bool = False
    """The latest leg was refused by the model API: the run's retry delivers its prompt
    again (the refused leg counts toward no budget of the run)."""
    outage: bool = False
    refusal: str | None = None
    """The model API's refusal kind when the run ended on an outage (the cooldown)."""
    report_posted: bool = False
    recorded: bool = False
    """Its report is on the target's research-log."""
    cleaned: bool = False
    """Its workspace was removed by housekeeping."""
    settled: bool = False
    """Ended with nothing left to say: its bulky details were dropped (see ``compact``)."""
    archive_jobs: list[str] = field(default_factory=list)
    """Its archive jobs, oldest first (kept through ``compact``)."""
    archive: ev.Archived | None = None
    """Where its files went (the ``archived`` event): where, files, at."""
    archive_error: str | None = None
    """The latest failed archive attempt's error (cleared by success)."""
    restored_at: str | None = None
    pruned: bool = False
    """Its jobs/ dirs were pruned by housekeeping (no archive configured)."""
    tallied: str = field(default="", compare=False)
    """The digest of the facts it contributed to its target's views when it settled
    (``ledger/tally.py``; empty: not in the tally). A derived mark, not a fact: two folds
    of one ledger may set it at different times, so it is left out of comparisons."""

    @property
    def ended(self) -> bool:
        return self.state == _ENDED

    @property
    def released(self) -> bool:
        """An ended run that leaves its issue claimable again: it failed to start (ended
        before its first leg) or ended on a model outage."""
        return self.ended and (self.outage or (self.ending == Ending.ABORTED and self.legs == 0))

    @property
    def revising(self) -> bool:
        """The review sent a blocked candidate back to the agent and nothing has been
        published since: what the agent does next is a revision (or the draft opens)."""
        return self.revision is not None and self.publish is None and \
            self.pr_number is None and not self.ended

    @property
    def rebasing(self) -> bool:
        """Parked to publish with its base moved: its job merges the candidate onto the
        new base (``rebase_to``), or, the merge recorded (``rebased``) and the candidate
        no longer published as measured, goes on from it (measures, or wakes the agent)."""
        return self.state == RunState.PARKED and self.park_reason == ParkReason.PUBLISH and (
            self.rebase_to is not None or (self.publish is None and self.rebased is not None))

    @property
    def undelivered(self) -> dict[str, FeedbackEntry]:
        return {k: v for k, v in self.feedback.items() if k not in self.delivered}

    @property
    def operator_messages(self) -> list[tuple[str, FeedbackEntry, bool]]:
        """The operator's messages (key without its prefix, entry, delivered), oldest
        first. A settled run keeps none (``compact`` drops its feedback)."""
        return sorted(((key.removeprefix(OPERATOR_PREFIX), item, key in self.delivered)
                       for key, item in self.feedback.items() if item.from_operator),
                      key=lambda found: found[1].at)


@dataclass(slots=True)
class ContractHealth:
    """Whether a target's contract loads, tick after tick (``contract_failed`` /
    ``contract_recovered`` events), and the alarm issue open about it."""

    target: str
    failing: int = 0
    """Consecutive ticks the contract failed to load (0: it validates)."""
    streak: int = 0
    """How many failing streaks have begun; numbers each streak's alarm."""
    errors: list[str] = field(default_factory=list)
    """The latest failing tick's errors."""
    alarm: int | None = None
    """The number of the open alarm issue (opened by the kernel, not yet closed)."""


@dataclass(slots=True, frozen=True)
class Published:
    """What a target's research-log holds, as its latest ``publish_record`` left it:
    the digests of its summary (leader.json + BENCHMARKS.md) and of its board, and that
    record's key. Which reports it holds is each run's ``recorded``."""

    summary: str | None = None
    board: str = ""
    key: str = ""
    """The latest record's done key: kept through ``compact``, older ones dropped."""


class Head(NamedTuple):
    """Where a ledger file's hash chain stands after a fold read it."""

    offset: int
    lines: int
    link: str
    chained: bool
    read: bool
    """This rebuild read new lines of it (else: as the cache knew it)."""


@dataclass(slots=True)
class EndpointLatch:
    """One model endpoint's outage latch as the ledger tells it."""

    down: bool = False
    since: str = ""
    """When the current outage began (the first ``endpoint_down`` while up)."""
    at: str = ""
    """The latest evidence, down or up."""
    source: str = ""
    """What said down last: ``leg``, ``judge`` or ``probe``."""
    refusal: str | None = None
    detail: str = ""
