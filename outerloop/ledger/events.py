"""Typed ledger events: msgspec structs in a union tagged by ``kind``.

Every line carries the envelope ``{"v", "seq", "at", "lc", "kind", "run"?}``. Kinds a newer
version wrote, which this version does not know, parse as ``UnknownEvent``: kept and
ignored, never fatal. Fields a newer version added are ignored. Events record facts;
``fold.py`` folds them into ``State``.

**Why msgspec, not pydantic, here**: the ledger is the one place outerloop decodes
history in bulk (hundreds of thousands of lines on a cold start). msgspec decodes
straight into typed structs about ten times faster than pydantic validates, with a
fraction of the memory. What an intent records (``effects.py``, ``compute/spec.py``) is
msgspec for the same reason; what is read once (contract, config) stays pydantic.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

import msgspec

from outerloop import vocabulary
from outerloop.effects import Effect, Unreadable
from outerloop.ledger.event_parts import Cite as Cite
from outerloop.ledger.event_parts import EffectResult as EffectResult
from outerloop.ledger.event_parts import EnvelopeAsFound as EnvelopeAsFound
from outerloop.ledger.event_parts import EvalPair as EvalPair
from outerloop.ledger.event_parts import EvalSide as EvalSide
from outerloop.ledger.event_parts import ExperimentRow as ExperimentRow
from outerloop.ledger.event_parts import ReviewFinding as ReviewFinding
from outerloop.ledger.event_parts import Severity as Severity
from outerloop.ledger.event_parts import SuiteNeed as SuiteNeed
from outerloop.ledger.event_parts import UnknownEvent as UnknownEvent
from outerloop.ledger.event_parts import _effect_result as _effect_result  # old caches
from outerloop.ledger.event_parts import _Event
from outerloop.ledger.event_parts import as_dict as as_dict
from outerloop.ledger.line_events import LineReset as LineReset
from outerloop.ledger.line_events import LineSaved as LineSaved
from outerloop.ledger.thread_events import CombineProposed as CombineProposed
from outerloop.ledger.thread_events import Feedback as Feedback
from outerloop.ledger.thread_events import FeedbackCursor as FeedbackCursor
from outerloop.ledger.thread_events import FeedbackDelivered as FeedbackDelivered
from outerloop.ledger.thread_events import IssueWidened as IssueWidened
from outerloop.ledger.thread_events import Outbox as Outbox

BaseEvent = _Event
"""Every known event's base: what ``LedgerWriter.append`` takes."""


# write-ahead intents -------------------------------------------------------------


class Intent(_Event, tag="intent", frozen=True, kw_only=True):
    """About to perform ``action``; ``effect_key`` identifies the effect.

    An action this version cannot read (a newer version's, or damaged) decodes as
    ``Unreadable`` (see ``ledger/decode.py``): the intent stays pending and
    ``Executor.reconcile`` marks it failed. Its envelope's ``run`` is written only with
    an ``Unreadable`` action (and was before issue 27): the action names its run."""

    key: str = ""
    """Written before issue 27, and with an ``Unreadable`` action; now the action's own
    ``key`` is the key: read ``effect_key``."""
    action: Effect | Unreadable

    @property
    def effect_key(self) -> str:
        """The key of the effect (what its ``done`` or ``failed`` names)."""
        if self.key or isinstance(self.action, Unreadable):
            return self.key
        return self.action.key


class Done(_Event, tag="done", frozen=True, kw_only=True):
    """The effect of intent ``key`` happened; ``result`` holds what it returned. Written
    without ``run``: its intent, in the same file, names it (one written before issue 27
    names it too)."""

    key: str
    result: EffectResult = msgspec.field(default_factory=EffectResult)
    reconciled: bool = False


class Failed(_Event, tag="failed", frozen=True, kw_only=True):
    """The effect of intent ``key`` failed for sure (not merely unknown). ``cause``: a
    ``retry_rule.Cause`` word (why, so when it is tried again and whether it waits on a
    human); empty in lines written before issue 48 (read as ``failed``)."""

    key: str
    error: str
    cause: str = ""


class Note(_Event, tag="note", frozen=True, kw_only=True):
    """Something an operator should read: a deferral, a skipped target, a warning."""

    level: Literal["info", "warning", "error"] = "info"
    text: str
    target: str | None = None


# jobs ---------------------------------------------------------------------------


class JobEnded(_Event, tag="job_ended", frozen=True, kw_only=True):
    """A job the state knew as live was observed in a terminal state."""

    job_id: str
    state: str
    """A ``vocabulary.JobState``, as written: the fold reads it with ``JobState.recorded``
    (a newer version's word is kept, never a malformed line)."""
    exit_code: int | None = None
    elapsed_s: int = 0
    gpu_seconds: int = 0
    """Allocated GPUs x elapsed over every attempt (sacct ``AllocTRES`` x ``-D``
    rows): what the job is charged to its run and its target's week."""
    task_elapsed_s: dict[int, int] = msgspec.field(default_factory=dict)
    """An array's tasks: each one's own elapsed (``elapsed_s`` is their sum)."""


# runs ---------------------------------------------------------------------------


RequestJson: TypeAlias = dict[str, object]
"""The agent's committed channel request as the tool wrote it (a JSON object, free-form
here): the run's job validates it (``CommittedRequest``) when it acts on it, so a
request a newer tool wrote is still recorded whole."""


class RunQueued(_Event, tag="run_queued", frozen=True, kw_only=True):
    """Intake claimed an issue (or the kernel chose a benchmark): a run exists."""

    target: str
    benchmark: str
    agent: str
    issue: int | None = None
    issue_title: str = ""
    hypothesis: str = ""
    claim_no: int = 1
    combines: list[int] = msgspec.field(default_factory=list)
    """The pull requests whose credited wins this run combines (a kernel ``combine``
    issue, ``lanes/integrate.py``); empty: an ordinary run."""
    seat: str = ""
    """The slot's harness and model when the run was claimed (``kind`` or
    ``kind:model``, ``fleet.Seat``): what the leaderboard counts it under, whatever the
    settings say later. Empty: claimed before this was recorded."""


class LegStarted(_Event, tag="leg_started", frozen=True, kw_only=True):
    leg: int
    role: str
    job_id: str | None = None
    endpoint: str = ""
    """The model endpoint the leg's session uses (empty: none, or written before)."""
    refused: str = ""
    """The gist of the kernel's refusals this leg's prompt carried (``Refused: no code
    change``): a fact an ending's reason cites."""


class LegEnded(_Event, tag="leg_ended", frozen=True, kw_only=True):
    leg: int
    stop_reason: str
    is_error: bool = False
    session_id: str | None = None
    cost_usd: float = 0.0
    turns: int = 0
    progress: bool = True
    request: RequestJson | None = None
    """The request the leg committed (None: it committed none)."""
    error: str | None = None
    delivered: list[str] = msgspec.field(default_factory=list)
    """The reviewer feedback (source ids) this leg's prompt carried. Feedback counts as
    delivered only when a leg that showed it has ended: a job killed before that point
    (a node failure) leaves it undelivered, so the next wake or recovery shows it again
    instead of the reviewer's words being lost with the dead job."""


class Launched(_Event, tag="launched", frozen=True, kw_only=True):
    """One experiment the agent asked for, as submitted (see ``launches`` in §10)."""

    sleep: int
    name: str
    job_id: str
    minutes: int
    why: str = ""
    command: str
    array: int | None = None
    concurrency: int | None = None
    artifacts: list[str] = msgspec.field(default_factory=list)
    seal: str
    job_name: str = ""
    gpus: int = 0
    """GPUs per task (per node)."""


class Parked(_Event, tag="parked", frozen=True, kw_only=True):
    """The run waits: on its jobs (``wake_job`` fires after them) or on review."""

    reason: Literal["jobs", "eval", "review"]
    job_ids: list[str] = msgspec.field(default_factory=list)
    wake_job: str | None = None
    deadline: str | None = None
    seal: str | None = None
    evals: list[EvalPair] = msgspec.field(default_factory=list)
    retry: bool = False
    """Re-parked on re-run evals of the same submission (not a new sleep)."""
    left_out: list[str] = msgspec.field(default_factory=list)
    """New files outside the scope the seal left out (the agent is told at the wake)."""
    confirm: bool = False
    """Parked on the confirmation pair of a credited submission (``retry`` is set too:
    it is no new sleep). Written by earlier versions only: the sequential gate's later
    looks replaced it."""
    look: int = 0
    """Which look of the submission's sequential test these eval pairs are for (0: the
    first, parked as the submission's sleep; later looks set ``retry`` too)."""
    first_pair: int = 0
    """The submission's index of the first own pair of this park (its seed's index; in
    couples, two pairs a seed, each ``EvalPair`` names its couple)."""


class DeadlineExtended(_Event, tag="deadline_extended", frozen=True, kw_only=True):
    """The park's jobs wait in the queue for a healthy reason (Priority, Resources, a
    QOS limit, BeginTime): the sweep moved the deadline instead of cancelling them."""

    deadline: str
    reason: str = ""


class InfraWait(_Event, tag="infra_wait", frozen=True, kw_only=True):
    """The run's leg job ``job_id`` died of the machine (a full disk or quota) or of the
    deployment (a failing setup line, a command that could not start, a placement the
    scheduler refuses), not of the run: the sweep waits and delivers the leg again
    (``infra.py``), instead of counting the death against the run's recoveries or
    releasing its issue. Written once per such job; the wait lasts while ``job_id`` is
    the run's latest leg job."""

    job_id: str
    cause: str
    """What showed it: the job's exit code, its stderr's words, or a full filesystem."""
    paths: list[str] = msgspec.field(default_factory=list)
    """Each filesystem found short when the wait began, with its figures."""
    message: str = ""
    """The operator's line: what is wrong and the fix (status, the board, the tick)."""
    origin: str = "space"
    """``space`` (a full disk or quota: retried once space is back) or ``deployment``
    (retried when the settings change, else after a backoff)."""
    settings_digest: str = ""
    """deployment: the digest of the job settings when the wait began (a change is the
    operator's fix: the leg is tried again at once)."""


class EndpointDown(_Event, tag="endpoint_down", frozen=True, kw_only=True):
    """Model endpoint ``endpoint`` is down: a session on it was refused (``source``
    ``leg`` or ``judge``, written by that run's job in its run file) or the tick's probe
    found it down (``probe``, written in the tick file of each target using it). The
    latch (``State.endpoints``) holds until an ``endpoint_up``, or a leg on it that the
    API did not refuse."""

    endpoint: str
    source: str
    refusal: str | None = None
    """The refusal kind (auth, credit, rate_limit, overload; ``harness/outage.py``), or
    None when nothing answered."""
    detail: str = ""


class EndpointUp(_Event, tag="endpoint_up", frozen=True, kw_only=True):
    """The tick's probe found endpoint ``endpoint`` up again: the latch lifts."""

    endpoint: str
    detail: str = ""


class EndpointWait(_Event, tag="endpoint_wait", frozen=True, kw_only=True):
    """The run's job ``job_id`` found its endpoint down and started no session (or its
    session, or its review's judge, was refused): the run waits, spending no leg, and
    the tick delivers it again as a ``retry`` once the endpoint is back
    (``kernel/lanes/endpoints.py``). In force while ``job_id`` is the run's latest leg
    job."""

    endpoint: str
    job_id: str | None = None
    review: bool = False
    """The review's judges wait (the verdict is recorded; the panel is to be run)."""
    detail: str = ""
    submission: int = 0
    """review: the submission whose review waits."""
    since: str = ""
    """review: when that review first waited (its bound, ``[review] wait_hours``)."""


class SeedsDrawn(_Event, tag="seeds_drawn", frozen=True, kw_only=True):
    """The gate's hidden seeds for submission ``submission``: kept in the ledger so a
    retried submission reuses them; never shown to the agent."""

    submission: int
    seeds: list[int]
    salt: str = ""
    """The secret the pair jobs' neutral names, their order and the later looks' seeds
    derive from (``attempt/pairs.py``)."""
    tree: str = ""
    """The git tree submitted (before the seal put withheld paths back): an identical
    tree submitted again is told this submission's verdict, measured no more."""
    change: str = ""
    """The submission's change key (``attempt/change_key.py``: the normalised diff
    against the base tree, and the benchmark): copied onto its verdict, so a near-
    identical change on the target is told that verdict, measured no more."""


class RunAlpha(_Event, tag="run_alpha", frozen=True, kw_only=True):
    """The run's share of its target's false-credit budget (``alpha_budget.py``), fixed by
    the tick at admission, before the run can measure anything, in the target's tick
    file; the first on record is the run's, whatever follows. A run without one
    (admitted before it existed) spends ``1 - confidence`` of its own."""

    alpha: float
    """The run's alpha: its submissions and looks share it (``attempt/sequential.py``)."""
    budget: float
    """The target's budget the share is of: the benchmark's ``1 - confidence``."""
    index: int
    """The run's holder index on the target (1: the first): ``alpha = budget * share(index)``."""
    held: float = 0.0
    """What the target's other holders held when this run was admitted."""


class Verdict(_Event, tag="verdict", frozen=True, kw_only=True):
    """The gate's verdict of one submission: the one record of it every reader (the
    session, the PR, the report, the board, ``status``) projects its view from."""

    verdict: vocabulary.GateVerdict
    benchmark: str
    baseline: str | None = None
    candidate: str | None = None
    delta: str | None = None
    """The mean gain in the benchmark's direction (positive is better)."""
    seeds: int = 1
    """The units measured, each a fresh hidden seed: couples (``order`` set: two pair
    jobs each), else pairs."""
    base_sha: str = ""
    seal_sha: str = ""
    detail: str = ""
    submission: int = 0
    """Which submission of the run this judges (0: written before the sequential gate)."""
    low: str | None = None
    high: str | None = None
    """The interval of the mean gain the test read (at the level it spent)."""
    sd: str | None = None
    """The noise measured: the standard deviation of the paired differences."""
    alpha: float = 0.0
    """What the deciding look spent of the run's false-credit budget (0: none)."""
    confidence: float = 0.0
    """The contract's confidence over the whole run (0: written before it existed)."""
    display_digits: int | None = None
    """The benchmark's ``display_digits`` when judged (None: unset), so the board and
    ``status`` show the verdict's numbers as its PR does (``numfmt``)."""
    in_process: bool = False
    """The benchmark had no trusted scorer: the number came from the candidate's own
    process (``attempt/in_process.py``; False for verdicts written before the label)."""
    change: str = ""
    """The submission's change key (``SeedsDrawn.change``; empty: written before it)."""
    order: str | None = None
    """How much better, in the benchmark's direction, the side that ran second in its
    pair job measured (``sequential.OrderEffect``: half the mean of each couple's
    base-first gain minus its candidate-first gain); None: pairs not in couples. The
    couples cancel it from the gain; shown when it is larger than the gain's interval."""
    order_low: str | None = None
    order_high: str | None = None
    """The order effect's interval, at the deciding look's alpha."""


class GateLook(_Event, tag="gate_look", frozen=True, kw_only=True):
    """One look of a submission's sequential test: the own pairs measured since the
    last look (``pairs``: base and candidate values as decimal strings) and what the
    test decided over all of them so far (``credit``, ``stop`` or ``more``)."""

    submission: int
    look: int
    pairs: list[tuple[str, str]]
    decision: str
    t: float = 0.0
    critical: float = 0.0
    alpha: float = 0.0
    detail: str = ""
    suite: str = ""
    """At the first look of a suite-measured submission: what the siblings showed."""
    needs: list[SuiteNeed] = msgspec.field(default_factory=list)
    """At the first look: the gains the climbed benchmark must reach for a credit, one
    per sibling worse than its free allowance but within its max (``attempt/suite.py``)."""


class Confirmation(_Event, tag="confirmation", frozen=True, kw_only=True):
    """A credited submission measured again, from its seal, in a fresh pair job with a
    fresh seed: ``reproduced`` when the gate credits that pair too."""

    submission: int
    reproduced: bool
    baseline: str | None = None
    candidate: str | None = None
    delta: str | None = None
    detail: str = ""


class PublishReady(_Event, tag="publish_ready", frozen=True, kw_only=True):
    """Credited: the tick should push ``seal_sha`` and open (or update) the PR."""

    seal_sha: str
    branch: str
    title: str
    body: str
    report: str = ""
    """The agent's report; empty when ``body`` holds it (``report_at``): read
    ``agent_report``."""
    report_at: tuple[int, int] | None = None
    """Where ``body`` holds the agent's report (start, end), instead of a second copy."""
    experiments: list[ExperimentRow] = msgspec.field(default_factory=list)
    draft: bool = False
    """The review found a blocking or tamper finding, or was degraded: open as a draft."""
    degraded: str = ""
    findings: list[ReviewFinding] = msgspec.field(default_factory=list)
    cites: list[Cite] = msgspec.field(default_factory=list)
    """The lines cut out of ``body`` (``ledger/cites.py``): the fold puts them back."""
    paths: list[str] = msgspec.field(default_factory=list)
    """The paths the candidate changes against its base: what the integrator compares
    (``lanes/integrate.py``: two wins touching none in common can be combined)."""

    @property
    def agent_report(self) -> str:
        """The agent's report: ``report``, or the part of ``body`` ``report_at`` names."""
        if self.report or self.report_at is None:
            return self.report
        start, end = self.report_at
        return self.body[start:end]


class RevisionAsked(_Event, tag="revision_asked", frozen=True, kw_only=True):
    """The review blocked a credited submission before any PR opened: its findings go
    back to the agent (at the wake that follows, as feedback from the review panel),
    which may revise and submit again. ``round`` counts these asks (``[review]
    revisions`` bounds them); ``draft`` is the pull request the blocked candidate
    opens as when the agent cannot revise (it stops, runs out of sleeps or legs)."""

    submission: int
    round: int
    findings: list[ReviewFinding]
    draft: PublishReady


class BaseMoved(_Event, tag="base_moved", frozen=True, kw_only=True):
    """The base branch moved past a credited candidate's base before its PR: merged onto
    ``base`` (git merge-tree in the kernel's clone), cleanly as the commit ``seal`` (measured
    again as a new submission), or with ``conflicts`` (those paths: the agent rebases)."""

    base: str
    was: str = ""
    """The base the candidate was credited against."""
    seal: str = ""
    conflicts: list[str] = msgspec.field(default_factory=list)


class RunEnded(_Event, tag="run_ended", frozen=True, kw_only=True):
    """Exactly one per run; the first recorded (by time) is the ending."""

    ending: str
    report: str = ""
    by: str = ""
    refusal: str | None = None
    reason: str = ""
    """Why, in one line from the kernel's own facts (``status``, the board, the report's
    kernel note). Empty on lines written before it existed."""
    withdrawn: str = ""
    """The ending ``withdrawn``: the agent's reason (``stop --withdraw``), posted fenced
    on the pull request the tick then closes; empty otherwise."""
    cites: list[Cite] = msgspec.field(default_factory=list)
    """The lines cut out of ``report`` (``ledger/cites.py``): the fold puts them back."""


class Leader(_Event, tag="leader", frozen=True, kw_only=True):
    """The leaderboard moved: a merge of ``run`` set ``benchmark``'s best."""

    target: str
    benchmark: str
    value: str
    baseline: str | None = None


# archive (written by a run's archive job, or `outerloop archive restore`) -----------


class ArchivedFile(msgspec.Struct, frozen=True, kw_only=True):
    """One object the archive job uploaded and verified."""

    name: str
    size: int
    md5: str


class Archived(_Event, tag="archived", frozen=True, kw_only=True):
    """The run's files are in object storage at ``where``, verified byte for byte
    (``files``: each uploaded object); the local copy may go."""

    where: str
    files: list[ArchivedFile]
    local_files: int = 0
    local_bytes: int = 0


class ArchiveFailed(_Event, tag="archive_failed", frozen=True, kw_only=True):
    """An archive attempt failed; nothing local was deleted. Retried next tick."""

    error: str


class ArchiveRestored(_Event, tag="archive_restored", frozen=True, kw_only=True):
    """The run's archive was brought back into ``runs/<id>`` (and verified)."""

    where: str


# targets ------------------------------------------------------------------------


class ContractFailed(_Event, tag="contract_failed", frozen=True, kw_only=True):
    """This tick the target's contract did not load (missing, bad YAML, schema errors):
    the target was skipped. One per failing tick; consecutive ones raise the alarm."""

    target: str
    errors: list[str]


class ContractRecovered(_Event, tag="contract_recovered", frozen=True, kw_only=True):
    """The target's contract validates again after failing ticks."""

    target: str


class GpuBudget(_Event, tag="gpu_budget", frozen=True, kw_only=True):
    """A target's budgets as its contract and the operator set them (recorded when they
    change), so the board and `status` show its GPU-hours left and its own caps without
    the contract."""

    target: str
    run_hours: float
    week_hours: float
    max_concurrent_gpus: int | None = None
    max_active_attempts: int | None = None
    """The target's cap on active runs (None: recorded before it was)."""
    run_usd: float | None = None
    """The model cost a run may spend (None: no cap, or recorded before there were)."""
    week_usd: float | None = None
    """The model cost the target may spend per 7 days (None: no cap)."""


class IssueWaits(_Event, tag="issue_waits", frozen=True, kw_only=True):
    """An issue the kernel would take cannot start yet (and is not claimed): why."""

    target: str
    issue: int
    reason: str


Event: TypeAlias = (
    Intent | Done | Failed | Note | JobEnded | RunQueued | LegStarted | LegEnded | Launched
    | Parked | SeedsDrawn | RunAlpha | Verdict | GateLook | Confirmation | PublishReady
    | RevisionAsked | BaseMoved | LineSaved
    | Outbox | Feedback | FeedbackCursor | FeedbackDelivered
    | RunEnded | Leader | ContractFailed | ContractRecovered | IssueWaits | GpuBudget | LineReset
    | IssueWidened | CombineProposed
    | DeadlineExtended | Archived | ArchiveFailed | ArchiveRestored | InfraWait
    | EndpointDown | EndpointUp | EndpointWait
)
"""Every event kind this version knows, written once: the decoders and ``KNOWN`` read it."""
KNOWN: tuple[type[_Event], ...] = get_args(Event)
Decoded: TypeAlias = Event | UnknownEvent
"""What a ledger line decodes into (``decode.decode_lines``): a known event, or a kind this
version does not know."""
RunEvent: TypeAlias = (
    LegStarted | LegEnded | Launched | Parked | SeedsDrawn | RunAlpha | Verdict | GateLook
    | Confirmation | PublishReady | RevisionAsked | BaseMoved | LineSaved | Outbox | Feedback
    | FeedbackCursor
    | FeedbackDelivered | RunEnded | DeadlineExtended | InfraWait | EndpointWait)
"""Events about one run only: the fold applies them to that run's ``RunRecord`` (and
holds them until its ``run_queued`` when they come first)."""
KNOWN_KINDS = frozenset(str(m.__struct_config__.tag) for m in KNOWN)
