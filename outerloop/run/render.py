"""Render what the kernel writes: the brief, the wakes, the PR body and the run report.

Every renderer is a pure function of a frozen pydantic input: same inputs, same text.
That is what lets a rendered brief be stored with the run and re-derived for audit, and
what makes rendering testable without I/O.

Text from outside the kernel (issue text, the contract, the roadmap, reports, job
output, reviewer comments) is untrusted. It is always capped (``text.cap``; each cut is
marked) and shown inside a code fence longer than any backtick run in it
(``text.fence``), below one statement of ``text.DATA_NOTE``. Short untrusted strings
that must sit inline (a table cell, a metric name) are collapsed to one line, capped
and put in a code span, so they cannot open a fence, forge a heading, a marker line,
HTML or an @-mention. The renderers take no seed at all, so the seed cannot leak
through them.
"""

from __future__ import annotations

from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import BaseModel, ConfigDict

from outerloop.agent_tool import layout, rules
from outerloop.forge.markers import render_marker
from outerloop.ledger import events as ev
from outerloop.ledger.events import ExperimentRow
from outerloop.line_paths import MEMORY_DIR, MEMORY_FILE
from outerloop.numfmt import (
    format_hours,
    format_usd,
    verdict_digits,
)
from outerloop.run.findings import Finding
from outerloop.run.number_words import change_words, direction_words, shown_number
from outerloop.text import (
    DATA_NOTE,
    cap,
    code_span,
    duration,
    fence,
    one_line,
    plain_cell,
    quote_agent,
    table_cell,
)
from outerloop.vocabulary import GateVerdict

# Caps on untrusted text, in characters (ARCHITECTURE.md §10).
MAX_HYPOTHESIS_CHARS = 4_000
MAX_CONTRACT_CHARS = 8_000
MAX_LESSONS_CHARS = 8_000
MAX_TRIED_CHARS = 8_000
"""The brief's list of what earlier runs of the target tried, at most."""
MAX_GUIDANCE_CHARS = 8_000
MAX_MEMORY_CHARS = 8_000
"""The agent's ``AGENT_MEMORY.md`` as the brief shows it, at most."""
MAX_RECENT_REPORTS = 5
MAX_RECENT_REPORT_CHARS = 4_000
MAX_COMMENT_CHARS = 6_000
MAX_OPERATOR_CHARS = 4_000
MAX_TAIL_CHARS = 8_000
MAX_WAKE_CHARS = 12_000
MAX_AGENT_REPORT_CHARS = 8_000
MAX_ISSUE_TITLE_CHARS = 300
MAX_DETAIL_CHARS = 2_000
MAX_NOTE_CHARS = 1_000
MAX_JUDGE_DIFF_CHARS = 60_000
# A reviewer comment is never shrunk below this to make a wake fit; whole comments are
# dropped (and counted) instead, so what is shown is never a meaningless stub.
MIN_COMMENT_CHARS = 1_000

# The agent tool's limits as the brief states them; the channel enforces them.
TOOL_LIMITS: dict[str, int] = {
    "launches_per_sleep": rules.DEFAULT_LIMITS["max_launches_per_sleep"],
    "minutes": rules.DEFAULT_LIMITS["max_launch_minutes"],
    "array": rules.DEFAULT_LIMITS["max_array"],
    "command_chars": rules.DEFAULT_LIMITS["max_command_chars"],
    "artifacts": rules.DEFAULT_LIMITS["max_artifacts"],
    "artifact_mb": rules.DEFAULT_LIMITS["max_artifact_bytes"] // (1024 * 1024),
    "why_chars": rules.DEFAULT_LIMITS["max_why_chars"],
    "report_chars": rules.DEFAULT_LIMITS["max_report_chars"],
}
"""The tool's limits as the brief states them: read from the tool's own rules."""
TOOL_NAME_RE = f"^{rules.NAME_PATTERN}$"
CREDIT_MIN_REL_PERCENT = "0.5"

RUN_MARKER_KIND = "run"


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BenchmarkView(_View):
    """The benchmark as the agent needs to know it (from the contract; untrusted)."""

    name: str
    metric: str
    direction: str
    command: str
    score: str | None = None
    outputs: str | None = None
    eval_only: list[str] = []
    confidence: float = 0.99
    max_pairs: int = 12


class RulerView(_View):
    """Where the benchmark stands: the measured baseline and the best credited result."""

    baseline: str | None = None
    best: str | None = None
    best_run: str | None = None


class ReportView(_View):
    """One earlier run's report (untrusted: an agent wrote it)."""

    run_id: str
    ending: str
    text: str


class BudgetView(_View):
    """What the run may still spend."""

    launches_left: int
    sleeps_left: int
    gpu_hours_left: float
    gpu_hours_used: float = 0.0
    max_launch_gpus: int = 0
    session_minutes: int
    max_launch_minutes: int
    usd_spent: float = 0.0
    """The model cost the run's legs recorded so far."""
    usd_cap: float | None = None
    """The run's model budget (None: no cap)."""


class LineView(_View):
    """The run's research line as its brief shows it (``run/lines.py``): the branch,
    where the session starts, how far that is from the base, the merge's conflicts, and
    the agent's own memory index (untrusted: the agent wrote it in earlier runs)."""

    branch: str
    start: str
    divergence: str
    """``git diff --shortstat`` of the line's start against the base."""
    new: bool = False
    """The line starts at the base this run (its first run)."""
    conflicts: list[str] = []
    memory: str = ""
    """``AGENT_MEMORY.md`` as the line holds it (empty: none yet)."""
    memory_unshown: str = ""
    """Why the line's ``AGENT_MEMORY.md`` is not shown (``lines.memory_at``)."""
    withheld: list[str] = []
    """Files the last save kept back from the line: they held a secret value."""


class BriefInputs(_View):
    """Everything the first leg's brief says; ``recent_reports`` newest first."""

    run_id: str
    agent: str
    target: str
    benchmark: BenchmarkView
    issue_number: int | None
    issue_title: str
    hypothesis: str
    contract_text: str
    ruler: RulerView
    lessons: str
    recent_reports: list[ReportView]
    budget: BudgetView
    scope_allowed: list[str]
    guidance: str = ""
    """The contract's ``guidance`` (the maintainers' words; untrusted, quoted)."""
    guards: list[str] = []
    """The benchmarks re-measured beside every candidate other than the run's own: the
    guards (``regression``), or every one under ``suite: {metric, direction}``."""
    operator: list[OperatorView] = []
    """Messages from the operator sent before the first leg."""
    tried: list[str] = []
    """One line per earlier ended run of the target, newest first (date, agent, how it
    ended, its report's title line): what was tried (``prompts.tried_lines``)."""
    line: LineView | None = None
    """The run's research line (None: its benchmark has no lines)."""


class LaunchResult(_View):
    """One launch (or one array task) as it came back at the wake."""

    sleep: int
    name: str
    task: int | None
    why: str
    job_id: str
    state: str
    exit_code: int | None
    elapsed_s: int
    stdout_tail: str
    stderr_tail: str
    artifacts: list[str]
    notes: list[str]
    interrupted: bool = False


class VerdictRow(_View):
    """A recorded verdict (``ev.Verdict``) with its numbers as printed (decimal strings):
    what a run's report lists (``recorded_view``)."""

    verdict: GateVerdict
    benchmark: str
    baseline: str | None
    candidate: str | None
    delta: str | None
    seeds: int
    detail: str = ""

    @property
    def credited(self) -> bool:
        return self.verdict == GateVerdict.IMPROVED


class VerdictView(VerdictRow):
    """A recorded verdict as the agent, the judges and the PR read it: the row, and what
    the contract says of its benchmark (``verdict_view.verdict_view``)."""

    metric: str
    direction: str
    scale: str = "linear"
    """The benchmark's ``scale``: how a change is stated in words (``change_words``)."""
    needed: str | None = None
    """The gain the gate required (the credit threshold), as printed."""
    seeded: bool = True
    """The benchmark takes a seed (``seed_env``): measurements are paired seeds."""
    coupled: bool = False
    """The pairs came in order-balanced couples (two pair jobs per seed, one in each
    order); ``seeds`` counts couples."""
    order: str | None = None
    order_low: str | None = None
    order_high: str | None = None
    """How much better the side that ran second measured, and its interval (couples)."""
    order_shown: bool = False
    """The order effect is larger than the gain interval's half-width: the PR says so."""
    low: str | None = None
    high: str | None = None
    """The interval of the mean gain the sequential test read (None: none recorded)."""
    noise: str | None = None
    """The noise it measured: the standard deviation of the paired differences."""
    confidence: str | None = None
    """The contract's confidence over the run, as printed (``99%``)."""
    spent: str | None = None
    """What the deciding look spent of the run's false-credit budget."""
    submission: int = 0
    history: list[str] = []
    """One line per submission of the run so far, this one last."""
    in_process: str = ""
    """Why the number came from the candidate's own process, with the fix (empty: a
    trusted scorer computed it; ``attempt/in_process.py``)."""
    suite: str = ""
    """What the suite gate measured beside it: each sibling benchmark's numbers and,
    under ``suite: {metric, direction}``, their aggregate (``attempt/suite.py``)."""


class FeedbackView(_View):
    """One reviewer comment, review or review comment (untrusted)."""

    author: str
    kind: str
    text: str
    where: str = ""


class OperatorView(_View):
    """A message the home's operator sent the run (``outerloop message``): quoted
    fenced, as data, attributed to the operator."""

    text: str
    at: str = ""


class RevisionView(_View):
    """The review blocked a credited submission and sent it back: what the agent is
    asked to do (its findings come as the review panel's feedback)."""

    submission: int
    round: int
    rounds: int


class WakeInputs(_View):
    """What happened while the agent slept."""

    run_id: str
    leg: int
    results: list[LaunchResult]
    verdict: VerdictView | None
    feedback: list[FeedbackView]
    notes: list[str]
    budget: BudgetView
    pr_number: int | None
    operator: list[OperatorView] = []
    revision: RevisionView | None = None


class AlphaView(_View):
    """What the target's false-credit budget held when the run was admitted
    (``ev.RunAlpha``), as the PR shows it (numbers already formatted)."""

    alpha: str
    """This run's alpha (its share)."""
    budget: str
    index: int
    """The run's holder index on the target (1: the first)."""
    held: str
    """What the target's other runs held when it was admitted."""


class CostView(_View):
    """What a credited candidate cost, as its PR shows it: the run's and the gate's
    wall time and GPU-hours, and the model cost the legs recorded."""

    run_wall_s: int
    run_gpu_hours: float
    model_usd: float
    gate_wall_s: int
    gate_jobs: int
    gate_gpu_hours: float
    gpus: bool
    """The run held GPUs (a CPU target's PR says no GPU-hours)."""


class PrInputs(_View):
    """The pull request body of a credited run."""

    model_config = ConfigDict(arbitrary_types_allowed=True)  # ExperimentRow: a msgspec row

    run_id: str
    agent: str
    benchmark: str
    issue_number: int | None
    closes_issue: bool = True
    """The body says ``Closes #N`` (a merge into the default branch closes the issue;
    ``[[targets]] close_issue``), else ``Addresses #N``."""
    report: str
    verdict: VerdictView
    seeds: int
    base_sha: str
    seal_sha: str
    experiments: list[ExperimentRow]
    findings: list[Finding]
    degraded: str = ""
    """Why the review panel could not vouch for the candidate (empty: it could)."""
    draft: bool = False
    revision_note: str = ""
    """What the review's revision rounds did, in the kernel's words (empty: none)."""
    budget: AlphaView | None = None
    """The target's false-credit budget (None: a run admitted before it)."""
    cost: CostView | None = None
    """What the candidate cost (None: not known, e.g. a body rendered in a test)."""
    supersedes: list[int] = []
    """The pull requests whose wins this one combines (closed when it merges)."""
    base_note: str = ""
    """Why the base is not the one the run started from (the base branch moved and the
    candidate was merged onto it and measured again; empty: it did not move)."""


class JudgeInputs(_View):
    """What a judge of the review panel reads (``diff`` and ``report`` untrusted)."""

    benchmark: str
    metric: str
    direction: str
    seed_env: str | None
    seeds: int
    baseline: str
    candidate: str
    delta: str
    scope: list[str]
    tamper: list[Finding]
    report: str
    diff: str
    verdict_file: str
    max_findings: int


class ReportInputs(_View):
    """The report every run ends with, posted on the issue and stored with the run."""

    model_config = ConfigDict(arbitrary_types_allowed=True)  # ExperimentRow: a msgspec row

    run_id: str
    ending: str
    benchmark: str
    hypothesis: str
    agent_report: str
    verdicts: list[VerdictRow]
    pr_number: int | None
    experiments: list[ExperimentRow]
    note: str = ""
    """The kernel's own words on the ending (one line)."""
    agent_note: str = ""
    """The agent's words on the ending (its stop report): quoted in a fence under
    "The agent wrote", never as the kernel's note."""


# --------------------------------------------------------------------------- text helpers



def capped_fence(value: str, limit: int, *, keep: str = "head") -> str:
    """Untrusted block text: capped (the cut marked) and then fenced."""
    return fence(cap(value, limit, keep=keep))


def agent_quote(value: str, limit: int, when: str = "") -> str:
    """The agent's words in a kernel post: capped, fenced, and attributed on the line
    right above the fence, so no reader takes them for outerloop's."""
    return quote_agent(cap(value, limit), when)


def recorded_view(told: ev.Verdict) -> VerdictRow:
    """A recorded verdict as a run's report shows it: its numbers at the verdict's
    digits (the ``display_digits`` it was recorded with), as the PR and the board
    show them. The record alone: the tick writes reports without the contract."""
    digits = verdict_digits(told.baseline, told.candidate, told.display_digits)
    return VerdictRow(
        verdict=told.verdict, benchmark=told.benchmark,
        baseline=shown_number(told.baseline, digits),
        candidate=shown_number(told.candidate, digits),
        delta=shown_number(told.delta, digits), seeds=told.seeds or 1, detail=told.detail)


# --------------------------------------------------------------------------- environment


@cache
def _environment() -> Environment:
    """The one jinja2 environment; built once, it holds no per-render state."""
    env = Environment(
        loader=PackageLoader("outerloop", "templates"),
        autoescape=False,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update({
        "fence": fence,
        "capped_fence": capped_fence,
        "agent_quote": agent_quote,
        "code": code_span,
        "cell": table_cell,
        "plain_cell": plain_cell,
        "one_line": one_line,
        "duration": duration,
        "direction_words": direction_words,
        "number": shown_number,
        "hours": format_hours,
        "usd": format_usd,
    })
    env.globals.update({
        "DATA_NOTE": DATA_NOTE,
        "CHANNEL_DIR": layout.CHANNEL_DIR,
        "TOOL_COMMAND": layout.TOOL_COMMAND,
        "RESULTS_DIR": layout.rel(layout.RESULTS_DIR),
        "TOOL": TOOL_LIMITS,
        "TOOL_NAME_RE": TOOL_NAME_RE,
        "CREDIT_MIN_REL_PERCENT": CREDIT_MIN_REL_PERCENT,
        "MAX_HYPOTHESIS_CHARS": MAX_HYPOTHESIS_CHARS,
        "MAX_CONTRACT_CHARS": MAX_CONTRACT_CHARS,
        "MAX_LESSONS_CHARS": MAX_LESSONS_CHARS,
        "MAX_TRIED_CHARS": MAX_TRIED_CHARS,
        "MAX_GUIDANCE_CHARS": MAX_GUIDANCE_CHARS,
        "MAX_MEMORY_CHARS": MAX_MEMORY_CHARS,
        "MEMORY_FILE": MEMORY_FILE,
        "MEMORY_DIR": MEMORY_DIR,
        "MAX_RECENT_REPORT_CHARS": MAX_RECENT_REPORT_CHARS,
        "MAX_AGENT_REPORT_CHARS": MAX_AGENT_REPORT_CHARS,
        "MAX_ISSUE_TITLE_CHARS": MAX_ISSUE_TITLE_CHARS,
        "MAX_DETAIL_CHARS": MAX_DETAIL_CHARS,
        "MAX_NOTE_CHARS": MAX_NOTE_CHARS,
        "MAX_JUDGE_DIFF_CHARS": MAX_JUDGE_DIFF_CHARS,
        "MAX_WAKE_CHARS": MAX_WAKE_CHARS,
        "MAX_OPERATOR_CHARS": MAX_OPERATOR_CHARS,
        "change_words": change_words,
    })
    return env


def render_template(template: str, **context: object) -> str:
    return _environment().get_template(template).render(**context)


# --------------------------------------------------------------------------- renderers


def render_brief(inputs: BriefInputs) -> str:
    """The first leg's prompt: task, contract, ruler, lessons, reports, budget, tool, rules."""
    return render_template(
        "brief.md.j2",
        i=inputs,
        reports=inputs.recent_reports[:MAX_RECENT_REPORTS],
        max_minutes=min(TOOL_LIMITS["minutes"], max(0, inputs.budget.max_launch_minutes)),
    )


def render_pr_body(inputs: PrInputs) -> str:
    """The body of a credited run's pull request, ending in the run's hidden marker."""
    return render_template(
        "pr_body.md.j2",
        i=inputs,
        marker=render_marker(RUN_MARKER_KIND, inputs.run_id),
    )


def render_judge_brief(inputs: JudgeInputs) -> str:
    """A review-panel judge's prompt: the materials, what to look for, how to answer."""
    return render_template("judge.md.j2", i=inputs)


def render_report(inputs: ReportInputs) -> str:
    """The run's closing report (every ending has one)."""
    return render_template("report.md.j2", i=inputs)
