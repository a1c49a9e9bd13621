"""The climb board: what the ledger says, for people (HTML, markdown) and tools (JSON).

Three files under ``<home>/board/``: ``index.html`` (one static page, no external
assets and no JavaScript, so it can be opened from disk, served by ``outerloop board
--serve`` or published as-is), ``CLIMB.md`` (the same for a forge's markdown view) and
``status.json``. All three come from one ``BoardView`` built by ``build_view``, a pure
function of ``State`` and the settings: the same ledger gives the same bytes. The only
clock is ``as_of``: the caller's ``now`` when given, else the latest ledger event.

Run text (issue titles, hypotheses) and anything an agent or a contract wrote is
untrusted: the HTML template escapes everything (autoescape on), the markdown puts it
in code spans with pipes escaped, and the SVG charts are drawn from numbers computed
here with their labels escaped by the template.

Settled runs (``compaction.compact``) keep no hypothesis and only their credited verdicts,
so the board shows their issue title and charts only what was credited for them.

Progress counts merged results only: the charts' best (``board_chart``) and the results
table (``board_results``) tell merged results from credited-but-unmerged and blocked
ones (``ledger/standing.py``), each with the gate's interval, pairs and confidence. A
target with no GPU budget that used no GPU-hours (a CPU target) shows no GPU cards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from outerloop.atomic import write_atomic
from outerloop.board_chart import (
    BOTTOM,
    CHART_H,
    CHART_W,
    DRAWING_FIELDS,
    LEFT,
    RIGHT,
    TOP,
    Chart,
    charts,
)
from outerloop.board_results import ResultRow, result_rows, standing_words, verdict_text
from outerloop.board_slots import (
    LeaderRow,
    LessonRow,
    SlotLine,
    leader_rows,
    lesson_rows,
    slot_lines,
)
from outerloop.clock import parse_stamp, shown, stamp, week_first_day
from outerloop.config import Settings
from outerloop.human_waits import run_waits
from outerloop.ledger.events import GpuBudget, Launched
from outerloop.ledger.history import RECENT_RUNS, History
from outerloop.ledger.state import JobRecord, RunRecord, RunState, State
from outerloop.numfmt import format_hours, format_number, format_pair, format_usd
from outerloop.text import duration, one_line, plain_cell, table_cell

if TYPE_CHECKING:  # jinja2 is imported when a board is rendered: a quiet tick renders none
    from jinja2 import Environment

    from outerloop.board_memo import BoardMemo

BOARD_DIR = "board"
BOARD_FILES = ("index.html", "CLIMB.md", "status.json")
STATUS_VERSION = 2
"""``status.json``'s shape. 2: a chart's ``best`` is merged results' alone, its points
carry ``standing``, ``why``, ``delta``, ``low``, ``high``, ``pairs``, ``couples`` and
``confidence``, and ``results`` lists the credited results by standing."""
MAX_BOARD_RUNS = RECENT_RUNS
"""The runs table shows this many runs (active ones always, then the most recent)."""
MAX_HEADLINE_CHARS = 140
MAX_REASON_CHARS = 300
MAX_MD_MEASUREMENTS = 20
WEEK = timedelta(days=7)



# --------------------------------------------------------------------------- the view


@dataclass(frozen=True, slots=True)
class RunRow:
    run: str
    target: str
    benchmark: str
    agent: str
    state: str
    """``queued``, ``running``, ``parked: review``, or the ending of an ended run."""
    active: bool
    issue: int | None
    headline: str
    last_event: str
    pr: int | None
    cost_usd: float
    """The model cost its legs recorded (0: none recorded; the board says ``—``)."""
    gpu_hours: float
    """GPU-hours its jobs were charged (allocated GPUs x elapsed)."""
    last_verdict: str
    """The latest verdict with its numbers as every surface shows them (``numfmt``)."""
    reason: str = ""
    """Why the run ended (its ``run_ended`` reason), or why it waits on the machine or
    the deployment: one line from the kernel's own facts, empty otherwise."""
    explain: str = ""
    """The command that tells the run's decisions with the ledger lines behind each
    (``outerloop explain RUN``, run where the home is). A command, not a per-run file:
    writing every shown run's timeline would make each board write read those runs'
    ledgers, and the board published on a research-log would carry files citing a
    ledger its readers do not have."""


@dataclass(frozen=True, slots=True)
class JobRow:
    job: str
    run: str
    purpose: str
    launch: str
    why: str
    state: str
    submitted: str
    age_s: int
    limit_min: int | None


@dataclass(frozen=True, slots=True)
class GpuRow:
    """A target's GPU-hours in the 7 days up to the board's time, and its budget."""

    target: str
    used: float
    budget: float | None
    left: float | None


@dataclass(frozen=True, slots=True)
class MoneyRow:
    """A target's (or the whole home's) model cost in the 7 days up to the board's time,
    against its cap (None: no cap), and each run's cap."""

    target: str
    """The target, or ``the home`` for every target together."""
    spent: float
    cap: float | None
    left: float | None
    run_cap: float | None = None


@dataclass(frozen=True, slots=True)
class ActiveRow:
    """A target's active runs against its own cap: ``max_active_attempts`` as its
    contract and the operator set it, recorded by admission (None: not recorded yet)."""

    target: str
    active: int
    max_active: int | None


@dataclass(frozen=True, slots=True)
class BoardBudgets:
    active: int
    max_active_attempts: int
    """The operator's ceiling (``[limits]``); each target's own cap is in ``caps``."""
    queued: int
    started_last_week: int
    max_new_runs_per_tick: int
    live_jobs: int
    cost_usd: float
    active_cost_usd: float
    endings: dict[str, int]
    gpu: list[GpuRow] = field(default_factory=list)
    caps: list[ActiveRow] = field(default_factory=list)
    money: list[MoneyRow] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BoardView:
    as_of: str
    targets: list[str]
    runs: list[RunRow]
    runs_total: int
    runs_omitted: int
    queue: list[JobRow]
    charts: list[Chart]
    budgets: BoardBudgets
    pr_base: dict[str, str]
    """Per target, the web URL prefix of its pull requests (GitHub only)."""
    waiting: list[tuple[str, int, str]] = field(default_factory=list)
    """(target, issue, why): issues the kernel would take that cannot start yet."""
    warnings: list[str] = field(default_factory=list)
    """Loud operator warnings (the sandbox is off), shown first."""
    results: list[ResultRow] = field(default_factory=list)
    """Credited results, merged first, then those not merged and the blocked ones."""
    results_omitted: int = 0
    leaderboard: list[LeaderRow] = field(default_factory=list)
    """Per agent slot: runs, credited and merged PRs, GPU-hours, money (``leaderboard``)."""
    lessons: list[LessonRow] = field(default_factory=list)
    lines: list[SlotLine] = field(default_factory=list)
    """Each slot's research line and where its memory is (``board_slots``)."""


# --------------------------------------------------------------------------- small helpers


def _headline(run: RunRecord) -> str:
    """The hypothesis's first line (intake makes it the issue title), else the title:
    a settled run keeps only its title."""
    for line in run.hypothesis.splitlines():
        if line.strip() and not line.lstrip().startswith("```"):
            return one_line(line, MAX_HEADLINE_CHARS)
    return one_line(run.issue_title, MAX_HEADLINE_CHARS)


def _state_label(run: RunRecord, state: State) -> str:
    if run.ended:
        return run.ending or "ended"
    wait = state.machine_wait(run)
    if wait is not None and wait.origin == "deployment":  # the reason says what
        return "waits for the deployment"
    if wait is not None:  # the machine's failure, not the run's: name what is full
        return f"waits for space: {'; '.join(wait.paths) or wait.cause}"
    human = run_waits(state, run.run_id)
    if human:  # a step only a person can unblock (issue 48): say which and why
        return f"waits on a human: {human[0].words}"
    if run.revising:  # the review sent a blocked candidate back to the agent
        return f"revising: review round {run.revisions}"
    if run.blocked:  # the review blocked its credited candidate: its PR is a draft
        return "blocked: draft PR" if run.pr_number is not None else "blocked: draft"
    if run.state == RunState.PARKED and run.park_reason:
        return f"parked: {run.park_reason}"
    return run.state


def _reason(run: RunRecord, state: State) -> str:
    """The run's reason line: why it ended, or why it waits on the machine."""
    told = _operator_words(run)
    if run.ended:
        return one_line(run.end_reason + told, MAX_REASON_CHARS)
    human = run_waits(state, run.run_id)
    if human:
        return one_line(f"fix: {human[0].fix}{told}", MAX_REASON_CHARS)
    wait = state.machine_wait(run)
    why = wait.cause if wait is not None else run.blocked
    return one_line(why + told, MAX_REASON_CHARS).removeprefix("; ")


def _operator_words(run: RunRecord) -> str:
    """``; operator: 1 message delivered, 1 waiting``: how many messages the operator
    sent the run (``outerloop message``), never their text (the board is published)."""
    sent = run.operator_messages
    if not sent:
        return ""
    waiting = sum(1 for _, _, delivered in sent if not delivered)
    counts = [f"{len(sent) - waiting} delivered"] if len(sent) > waiting else []
    counts += [f"{waiting} waiting"] if waiting else []
    return f"; operator: {len(sent)} message{'s' if len(sent) > 1 else ''} " \
           f"({', '.join(counts)})"


def _when(at: str) -> datetime | None:
    try:
        return parse_stamp(at)
    except ValueError:
        return None


def _short_time(at: str) -> str:
    """``2024-05-01 12:03:09`` (UTC) from a ledger stamp; other text as given."""
    moment = _when(at)
    return shown(moment) if moment else at


def _pr_base(settings: Settings) -> dict[str, str]:
    if settings.forge.kind != "github" or \
            settings.forge.api_url.rstrip("/") != "https://api.github.com":
        return {}
    return {t.repo: f"https://github.com/{t.repo}/pull/" for t in settings.targets}


# --------------------------------------------------------------------------- building


def _run_rows(state: State, history: History) -> tuple[list[RunRow], int]:
    """Active runs always, then the most recent by last event, up to the cap."""
    recent = history.recent()
    active = [r for r in recent if not r.ended]
    ended = [r for r in recent if r.ended]
    shown = active + ended[: max(0, MAX_BOARD_RUNS - len(active))]
    shown.sort(key=lambda r: (r.updated_at, r.run_id), reverse=True)
    rows = [RunRow(run=r.run_id, target=r.target, benchmark=r.benchmark, agent=r.agent,
                   state=_state_label(r, state), active=not r.ended, issue=r.issue,
                   headline=_headline(r), last_event=r.updated_at, pr=r.pr_number,
                   cost_usd=round(r.cost_usd, 4), gpu_hours=round(r.gpu_seconds / 3600, 4),
                   last_verdict=verdict_text(r.verdicts[-1]) if r.verdicts else "",
                   reason=_reason(r, state), explain=f"outerloop explain {r.run_id}")
            for r in shown]
    return rows, history.total - len(shown)


def _queue(state: State, history: History, as_of: datetime | None) -> list[JobRow]:
    launches: dict[str, Launched] = {}
    for run in history.live:  # a settled run keeps no launches
        for recorded in run.launches:
            launches[recorded.job_id] = recorded
    rows = []
    live: list[JobRecord] = sorted(state.live_jobs(), key=lambda j: (j.submitted_at, j.job_id))
    for job in live:
        launch = launches.get(job.job_id)
        submitted = _when(job.submitted_at)
        age = int((as_of - submitted).total_seconds()) if as_of and submitted else 0
        rows.append(JobRow(job=job.job_id, run=job.run or "", purpose=job.purpose,
                           launch=job.launch or (launch.name if launch else "") or job.name,
                           why=one_line(launch.why if launch else "", 200), state=job.state,
                           submitted=job.submitted_at, age_s=max(age, job.elapsed_s, 0),
                           limit_min=launch.minutes if launch else None))
    return rows


def _budgets(settings: Settings, state: State, history: History,
             as_of: datetime | None) -> BoardBudgets:
    runs = history.live  # a settled run has ended: it is neither active nor queued
    week_ago = stamp(as_of - WEEK) if as_of else ""
    return BoardBudgets(
        active=sum(1 for r in runs if r.admitted and not r.ended),
        max_active_attempts=settings.limits.max_active_attempts,
        queued=sum(1 for r in runs if not r.admitted and not r.ended),
        started_last_week=history.admitted_since(week_ago),
        max_new_runs_per_tick=settings.limits.max_new_runs_per_tick,
        live_jobs=len(state.live_jobs()),
        cost_usd=round(history.cost_usd(), 4),
        active_cost_usd=round(sum(r.cost_usd for r in runs if not r.ended), 4),
        endings=dict(sorted(history.endings().items())),
        gpu=_gpu_rows(settings, state, as_of),
        caps=_caps(settings, state, history),
        money=_money_rows(settings, state, as_of),
    )


def _caps(settings: Settings, state: State, history: History) -> list[ActiveRow]:
    """Per target, its active runs against its own ``max_active_attempts`` (the
    contract's, within the operator's ceiling) as admission last recorded it."""
    rows = []
    runs = history.live
    for repo in sorted({t.repo for t in settings.targets} | history.targets):
        recorded = state.gpu_budgets.get(repo)
        rows.append(ActiveRow(repo, sum(1 for r in runs if r.target == repo and r.admitted
                                        and not r.ended),
                              recorded.max_active_attempts if recorded else None))
    return rows


def _gpu_rows(settings: Settings, state: State, as_of: datetime | None) -> list[GpuRow]:
    if as_of is None:
        return []
    first = week_first_day(as_of)
    rows = []
    for repo in sorted({t.repo for t in settings.targets} | set(state.gpu_budgets)):
        used = round(state.gpu_hours_since(repo, first), 2)
        recorded = state.gpu_budgets.get(repo)
        budget = recorded.week_hours if recorded is not None else None
        if not budget and not used:  # no GPU budget and none used: a CPU target
            continue
        left = None if budget is None else round(max(0.0, float(budget) - used), 2)
        rows.append(GpuRow(repo, used, budget, left))
    return rows


def _money_rows(settings: Settings, state: State, as_of: datetime | None) -> list[MoneyRow]:
    """Per target, then for the home: the model cost of the last 7 days against its cap
    (the target's as admission last recorded it; the home's from ``[limits]``)."""
    if as_of is None:
        return []
    first = week_first_day(as_of)
    rows = []
    for repo in sorted({t.repo for t in settings.targets} | set(state.gpu_budgets)):
        spent = round(state.usd_since(repo, first), 4)
        recorded = state.gpu_budgets.get(repo)
        cap = recorded.week_usd if recorded is not None else None
        run_cap = recorded.run_usd if recorded is not None else None
        if cap is None and run_cap is None and not spent:
            continue
        left = None if cap is None else round(max(0.0, cap - spent), 4)
        rows.append(MoneyRow(repo, spent, cap, left, run_cap))
    home_cap = settings.limits.usd_per_week_home
    if home_cap is not None:
        spent = round(state.usd_since(None, first), 4)
        rows.append(MoneyRow("the home", spent, home_cap, round(max(0.0, home_cap - spent), 4)))
    return rows


def build_view(settings: Settings, state: State, now: str | None = None,
               warnings: Sequence[str] = (), history: History | None = None) -> BoardView:
    """Everything the board shows, from the folded state; ``now`` (a ledger stamp)
    defaults to the latest event so the output depends on the ledger alone. ``history``:
    the runs to show (``target_state``'s one target; default: every run)."""
    as_of = now or state.last_at
    moment = _when(as_of) if as_of else None
    history = history or History.of(state.runs)
    runs, omitted = _run_rows(state, history)
    targets = sorted({t.repo for t in settings.targets} | history.targets)
    drawn = charts(state, history)
    results, results_omitted = result_rows(drawn)
    budgets = _budgets(settings, state, history, moment)
    return BoardView(as_of=as_of, targets=targets, runs=runs, runs_total=history.total,
                     runs_omitted=omitted, queue=_queue(state, history, moment),
                     charts=drawn, budgets=budgets, pr_base=_pr_base(settings),
                     waiting=[(target, issue, reason) for (target, issue), (reason, _since)
                              in sorted(state.waiting.items())],
                     warnings=list(warnings), results=results,
                     results_omitted=results_omitted,
                     leaderboard=leader_rows(settings, state, history),
                     lessons=lesson_rows(history), lines=slot_lines(history))


# --------------------------------------------------------------------------- rendering


def _md_plain(value: object, limit: int = 200) -> str:
    """Kernel-made text (states, ids, numbers) in a markdown cell: one line, pipes
    escaped, angle brackets neutralised in case a ledger line was not ours."""
    return plain_cell(value, limit).replace("<", "&lt;").replace(">", "&gt;")


def _cost(cost_usd: float) -> str:
    """A run's model cost, or ``—`` when its legs recorded none (a harness that reports
    no cost, or no leg yet): never an empty cell."""
    return format_usd(cost_usd) if cost_usd > 0 else "—"


def _direction_words(direction: str) -> str:
    return {"min": "lower is better", "max": "higher is better"}.get(direction, "")


@cache
def _environment(markdown: bool, home: Path | None = None) -> Environment:
    """HTML autoescapes every value (run text is untrusted); markdown escapes by the
    ``cell`` filter instead, since HTML entities would garble a plain-text view.
    ``home``: keep the compiled templates under it (``template_cache``)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("outerloop", "templates"),
        autoescape=not markdown,
        keep_trailing_newline=True, undefined=StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update({"cell": table_cell, "plain": _md_plain, "time": _short_time,
                        "duration": duration, "direction_words": _direction_words,
                        "metric": format_number, "hours": format_hours,
                        "usd": format_usd, "cost": _cost,
                        "standing_words": standing_words})
    env.globals.update({"CHART_W": CHART_W, "CHART_H": CHART_H, "LEFT": LEFT,
                        "RIGHT": RIGHT, "TOP": TOP, "BOTTOM": BOTTOM, "pair": format_pair,
                        "MAX_MD_MEASUREMENTS": MAX_MD_MEASUREMENTS})
    if home is not None:
        from outerloop.template_cache import attach

        attach(env, home)
    return env


def render_html(view: BoardView, home: Path | None = None) -> str:
    return _environment(False, home).get_template("board.html.j2").render(v=view)


def render_markdown(view: BoardView, home: Path | None = None) -> str:
    return _environment(True, home).get_template("climb.md.j2").render(v=view)


def render_status(view: BoardView) -> str:
    """``status.json``: the view without drawing geometry, keys sorted."""
    import msgspec

    data = msgspec.to_builtins(view)  # as dataclasses.asdict, at a tenth of its cost
    for chart in data["charts"]:
        for key in DRAWING_FIELDS:
            chart.pop(key)
    data = {"version": STATUS_VERSION, **data}
    # msgspec's encoder: Python's with indent=2 is its pure-Python one (~20 ms a board at
    # 100,000 runs). The same text but for numbers' spelling (1e-05 is 0.00001; a NaN,
    # which Python would write as the invalid NaN, is null): the values read back alike.
    compact = msgspec.json.encode(data, order="sorted")
    return msgspec.json.format(compact, indent=2).decode() + "\n"


def render_board(settings: Settings, state: State, now: str | None = None,
                 warnings: Sequence[str] = (), history: History | None = None
                 ) -> dict[str, str]:
    """The board's files by name; pure."""
    return render_view(build_view(settings, state, now, warnings, history), settings.home)


def render_view(view: BoardView, home: Path | None = None) -> dict[str, str]:
    """A view's files by name; pure (``home``: where compiled templates are kept)."""
    return {"index.html": render_html(view, home),
            "CLIMB.md": render_markdown(view, home),
            "status.json": render_status(view)}


def write_board(settings: Settings, state: State, now: str | None = None,
                memo: BoardMemo | None = None) -> list[Path]:
    """Render and write ``<home>/board/``, each file atomically (temporary + rename),
    so a reader or a web server never sees half a page. With ``memo``, a board whose
    view and files are those it rendered last is left as it is (``board_memo.py``), and
    what is rendered is remembered. Raises on I/O errors; the tick turns that into a
    note. The paths written."""
    from outerloop import board_memo
    from outerloop.sandbox.kept_warning import tick_warning

    directory = settings.home / BOARD_DIR
    warning = tick_warning(settings.home, settings.sandbox)
    warnings = ([warning] if warning else []) + list(state.frozen.values())  # a damaged ledger
    view = build_view(settings, state, now, warnings)
    key = board_memo.view_key(view) if memo is not None else ""
    kept = memo.rendered(board_memo.HOME_BOARD, key) if memo is not None else None
    if kept is not None and _on_disk(directory) == kept:
        return []
    files = render_view(view, settings.home)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        path = directory / name
        write_atomic(path, text)
        written.append(path)
    if memo is not None:
        memo.remember(board_memo.HOME_BOARD, key, board_memo.files_digest(files))
    return written


def _on_disk(directory: Path) -> str | None:
    """The digest of the board's files as they are on disk, or None (one is missing)."""
    from outerloop.board_memo import files_digest

    try:
        return files_digest({name: (directory / name).read_text(encoding="utf-8")
                             for name in BOARD_FILES})
    except (OSError, UnicodeDecodeError):
        return None


def target_state(state: State, target: str, budget: GpuBudget | None = None,
                 history: History | None = None) -> tuple[State, History]:
    """The part of ``state`` about one target, dated by that target's own latest
    change, so its published board changes only when the target's runs do, and the
    target's runs (its ``History``). ``budget``: the target's budgets as this tick records
    them (its caps on the board at once). ``history``: the target's, when the caller
    has it already."""
    history = history or History.of(state.runs, target)
    jobs = {k: j for k, j in state.jobs.items() if j.target == target}
    leaders = {k: v for k, v in state.leaders.items() if k[0] == target}
    stamps = [history.latest()]
    stamps += [v.at for v in leaders.values()]
    stamps += [j.ended_at or j.submitted_at for j in jobs.values()]
    waiting = {k: v for k, v in state.waiting.items() if k[0] == target}
    stamps += [since for _reason, since in waiting.values()]
    budgets = {k: v for k, v in state.gpu_budgets.items() if k == target}
    if budget is not None:
        budgets[target] = budget
    costs = {k: dict(v) for k, v in state.cost_days.items() if k == target}
    failures = {k: f for k, f in state.failures.items() if f.target == target}
    stamps += [f.last_at for f in failures.values()]
    part = State(runs=history.live_runs(), jobs=jobs, leaders=leaders,
                 waiting=waiting, gpu_budgets=budgets, cost_days=costs, failures=failures,
                 last_at=max((s for s in stamps if s), default=""))
    return part, history


def target_view(settings: Settings, state: State, target: str,
                budget: GpuBudget | None = None,
                history: History | None = None) -> BoardView:
    """The view of one target's board, as published on its research-log; pure. Other
    targets of the same home are left out (and so is the home's money)."""
    one = settings.model_copy(update={
        "targets": [t for t in settings.targets if t.repo == target],
        "limits": settings.limits.model_copy(update={"usd_per_week_home": None})})
    part, history = target_state(state, target, budget, history)
    return build_view(one, part, history=history)


def target_board(settings: Settings, state: State, target: str,
                 budget: GpuBudget | None = None,
                 history: History | None = None) -> dict[str, str]:
    """The board of one target, as published on its research-log (``board/...``);
    pure."""
    view = target_view(settings, state, target, budget, history)
    return published_files(view, settings.home)


def published_files(view: BoardView, home: Path | None = None) -> dict[str, str]:
    """A target board's files as its research-log record holds them (``board/...``)."""
    return {f"{BOARD_DIR}/{name}": text for name, text in render_view(view, home).items()}
