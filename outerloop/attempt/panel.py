"""The review of a credited candidate: the tamper check, then the panel of judges.

Judges are harness sessions in a review role, started through the same harness seam as
the agents' legs (so whatever confines an agent session confines a judge). Each judge
gets its own directory ``runs/<run>/review/s<submission>-j<n>/``:

- ``base/`` and ``candidate/``: fresh, read-only checkouts of the two commits, with
  agent instruction files (CLAUDE.md, AGENTS.md, .claude, .codex ...) renamed away so
  the code under review cannot address the judge;
- the judge's prompt lists the diff, the agent's report, the gate's numbers and the
  tamper findings; the judge answers by writing ``verdict.json`` beside them;
- a private HOME in ``...-home/``.

Beside them, the report check (``attempt/claims.py``): numbers the agent's report
states about the metric that the gate did not measure, as one advisory finding.

Any blocking finding (every tamper finding is one) makes the PR a draft carrying the
findings, once the agent had its revision rounds (``attempt/credit.py``). A judge that
leaves no valid verdict (silence, an outage, a crash) makes the review *degraded*, and
the PR a draft too: silence is not endorsement. Except an outage of the judges' own
endpoint (``fleet.judge_seat``), within ``[review] wait_hours`` of the review's first
wait: the review waits for it like an author's leg (``attempt/endpoint_gate.py``) and
is run again whole when it is back.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from outerloop.attempt import endpoint_gate
from outerloop.attempt.claims import Measured, report_findings
from outerloop.attempt.context import RunContext
from outerloop.attempt.pair_flow import metric_stdout
from outerloop.attempt.prompts import load_report
from outerloop.attempt.tamper import check_output, review_findings
from outerloop.errors import OuterloopError
from outerloop.fleet import judge_seat
from outerloop.harness.base import SessionLimits, SessionResult
from outerloop.harness.factory import make_harness
from outerloop.ledger import events as ev
from outerloop.line_paths import INSTRUCTION_NAMES
from outerloop.run.findings import (
    MAX_DETAIL_CHARS,
    MAX_FILE_CHARS,
    MAX_SUMMARY_CHARS,
    Finding,
)
from outerloop.run.render import JudgeInputs, VerdictView, render_judge_brief
from outerloop.run.workspace import checkout, diff_text, tracked_files
from outerloop.sandbox import beneath, reaper
from outerloop.sandbox.secrets import known_secrets
from outerloop.text import cap, one_line, redact

VERDICT_FILE = "verdict.json"
MAX_VERDICT_BYTES = 64 * 1024
MAX_JUDGE_FINDINGS = 20
HIDDEN_SUFFIX = ".hidden-by-outerloop"


class JudgeVerdict(BaseModel):
    """``verdict.json`` as a judge must write it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["approve", "block"]
    findings: list[Finding] = Field(default_factory=list, max_length=MAX_JUDGE_FINDINGS)


@dataclass(frozen=True)
class ReviewOutcome:
    """The review's findings; ``degraded`` says why the panel could not vouch (empty
    when every judge concluded)."""

    findings: list[Finding] = field(default_factory=list)
    degraded: str = ""

    @property
    def draft(self) -> bool:
        return bool(self.degraded) or any(f.blocking for f in self.findings)


def review_candidate(ctx: RunContext, view: VerdictView,
                     job_id: str | None = None) -> ReviewOutcome:
    """Tamper-check the credited seal against the base, then convene the panel."""
    run = ctx.run
    assert run.base_sha is not None and run.park_seal is not None
    diff = diff_text(ctx.paths, run.base_sha, run.park_seal)
    tamper = review_findings(ctx.paths, run.base_sha, run.park_seal, diff, ctx.benchmark,
                             ctx.contract, tracked_files(ctx.paths, run.base_sha))
    tamper += check_output(candidate_stdouts(ctx), ctx.benchmark.metric)
    report = load_report(ctx)
    claimed = report_findings(report, ctx.benchmark.metric, measured(ctx))
    inputs = JudgeInputs(
        benchmark=ctx.benchmark.name, metric=ctx.benchmark.metric,
        direction=ctx.benchmark.direction, seed_env=ctx.benchmark.seed_env, seeds=view.seeds,
        baseline=view.baseline or "", candidate=view.candidate or "", delta=view.delta or "",
        scope=[*ctx.contract.scope.allowed, *ctx.contract.scope.shared], tamper=tamper,
        report=report, diff=diff, verdict_file=VERDICT_FILE,
        max_findings=MAX_JUDGE_FINDINGS)
    panel = convene(ctx, inputs, job_id)
    return ReviewOutcome([*tamper, *claimed, *panel.findings], panel.degraded)


def measured(ctx: RunContext) -> Measured:
    """What the gate measured of the credited submission: its verdict's figures and
    every pair of its looks (the report check compares the report with them)."""
    told = ctx.run.verdicts[-1]
    looks = ctx.run.looks.get(told.submission or ctx.run.submissions, [])
    return Measured(baseline=told.baseline, candidate=told.candidate, delta=told.delta,
                    low=told.low, high=told.high, sd=told.sd,
                    pairs=[pair for look in looks for pair in look.pairs])


def candidate_stdouts(ctx: RunContext) -> list[Path]:
    """The stdout the gate read for each candidate side of the pairs just judged (the
    scorer's, with a trusted scorer); the output check reads each file whole."""
    out = []
    for pair in ctx.run.park_evals:
        if pair.bench is not None:
            continue  # a sibling's eval (the suite gate): another metric
        where = metric_stdout(ctx, pair, "cand")
        if where is not None:
            out.append(where)
    return out


def convene(ctx: RunContext, inputs: JudgeInputs, job_id: str | None = None) -> ReviewOutcome:
    """Run each judge once; their findings, or why the review is degraded."""
    judges = ctx.settings.review.judges
    if judges == 0:
        return ReviewOutcome(degraded="no review panel is configured ([review] judges = 0)")
    try:
        seat = judge_seat(ctx.settings)
        harness = make_harness(ctx.settings, seat)
    except OuterloopError as exc:
        return ReviewOutcome(degraded=f"the judges could not start: {str(exc)[:300]}")
    waits = seat.endpoint is not None and endpoint_gate.review_may_wait(ctx)
    why = endpoint_gate.held(ctx, seat.endpoint, job_id)
    if waits and why is not None and seat.endpoint is not None:
        raise endpoint_gate.ReviewWaits(seat.endpoint, why)
    prompt = render_judge_brief(inputs)
    limits = SessionLimits(max_turns=ctx.settings.review.max_turns,
                           minutes=ctx.settings.review.minutes)
    findings: list[Finding] = []
    silent: list[str] = []
    for index in range(1, judges + 1):
        name = f"judge-{index}"
        where = ctx.paths.root / "review" / f"s{ctx.run.submissions}-j{index}"
        home = where.with_name(where.name + "-home")
        prepare_judge_dir(ctx, where, home)
        (where.parent / f"{where.name}-prompt.md").write_text(prompt, encoding="utf-8")
        try:
            with reaper.tree_ends():  # the judge's tree is dead before its verdict is read
                result = harness.run(prompt, where, home, None, limits)
            verdict = read_verdict(where, name)
        finally:
            writable(where)
        if result.outage and waits and seat.endpoint is not None:
            detail = one_line(result.error_detail or "", endpoint_gate.MAX_DETAIL_CHARS)
            ctx.append(ev.EndpointDown(endpoint=seat.endpoint, source="judge",
                                       refusal=result.refusal, detail=detail))
            raise endpoint_gate.ReviewWaits(seat.endpoint, f"{name}: the model API refused "
                                            f"({result.refusal or 'outage'}): {detail}")
        if isinstance(verdict, str):
            silent.append(f"{name} {verdict} ({_how(result)})")
            findings.append(judge_failure(ctx.settings.home, name, verdict, result, where,
                                          known_secrets(ctx.settings)))
            continue
        findings.extend(verdict)
    if silent:
        silent.append("each judge's own words and the file holding its session are "
                      "quoted below")
    return ReviewOutcome(findings, "; ".join(silent))


def _how(result: SessionResult) -> str:
    if result.outage:
        return f"the model API refused: {result.refusal or 'outage'}"
    return f"session ended {result.stop_reason}"


def judge_failure(home: Path, name: str, verdict: str, result: SessionResult,
                  where: Path, secrets: list[str]) -> Finding:
    """A judge that gave no verdict, as an advisory finding of its own (the draft is
    the degraded review's): why, in the session's own words (its error, else its last
    text), and ``file``: where its session is recorded (the transcript; without one,
    its directory), relative to the home. A judge's words are untrusted: the PR fences
    every finding; a secret value in them is redacted."""
    record = Path(result.transcript_path) if result.transcript_path else where
    try:
        shown = str(record.resolve().relative_to(home.resolve()))
    except (OSError, ValueError):
        shown = record.name
    words = redact((result.error_detail or result.final_text or "").strip(), secrets)
    return Finding(severity="advisory", source=name, file=shown[:MAX_FILE_CHARS],
                   summary=f"{name} {verdict}: {_how(result)}"[:MAX_SUMMARY_CHARS],
                   detail=cap(words or "the session said nothing", MAX_DETAIL_CHARS,
                              keep="tail"))


def prepare_judge_dir(ctx: RunContext, where: Path, home: Path) -> None:
    """Fresh read-only checkouts of base and candidate in ``where``, without the
    benchmark's eval-only paths (a judge is an agent session too); a fresh ``home``."""
    assert ctx.run.base_sha is not None and ctx.run.park_seal is not None
    for path in (where, home):
        if path.exists():
            beneath.remove(path.parent, path.name)  # never through a judge's symlink
    where.mkdir(parents=True)
    home.mkdir(mode=0o700)
    for side, commit in (("base", ctx.run.base_sha), ("candidate", ctx.run.park_seal)):
        checkout(ctx.paths, commit, where / side, ctx.contract.eval_only)
        hide_instructions(where / side)
        read_only(where / side)


def hide_instructions(tree: Path) -> list[str]:
    """Rename agent instruction files and directories anywhere in ``tree`` to
    ``<name>.hidden-by-outerloop``; returns the renamed paths (tree-relative).

    The candidate's tree is the agent's: it may already hold that name (a file, a
    directory, a symlink). Then the entry is hidden under the first free name of
    ``<name>.hidden-by-outerloop.<n>`` (``hidden_name``): the agent's entry stays as it
    was, nothing is replaced, and the set-up never fails on the collision (issue 46: a
    directory there crashed every wake of the run). A symlink is renamed as a link,
    never followed. The walk goes through descriptors (``beneath.walk_at``), so an
    instruction file nested past ``PATH_MAX`` is hidden too (``os.walk`` skipped such a
    directory without a word); the judge sees the tree before any judge runs."""
    renamed = []
    for entry in beneath.walk_at(tree):
        if entry.name.casefold() in INSTRUCTION_NAMES:
            os.rename(entry.name, hidden_name(entry.dir_fd, entry.name),
                      src_dir_fd=entry.dir_fd, dst_dir_fd=entry.dir_fd)
            renamed.append(entry.rel)  # renamed: the walk does not enter it
    return renamed


def hidden_name(dir_fd: int, name: str) -> str:
    """Where ``name`` (in the directory ``dir_fd``) is hidden: ``<name>.hidden-by-
    outerloop``, else the first of ``...hidden-by-outerloop.1``, ``.2``, ... that names
    nothing there (``lstat``: a dangling symlink names something). Ends: a directory
    holds finitely many entries."""
    base = name + HIDDEN_SUFFIX
    for n in itertools.count():
        candidate = base if n == 0 else f"{base}.{n}"
        try:
            os.stat(candidate, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return candidate
    raise AssertionError("unreachable: itertools.count never ends")


def read_only(tree: Path) -> None:
    """Remove every write bit under ``tree`` and of ``tree`` (through descriptors, at
    any depth; symlinks left alone)."""
    for entry in beneath.walk_at(tree):
        if not stat.S_ISLNK(entry.info.st_mode):
            beneath.chmod_at(entry.dir_fd, entry.name,
                             stat.S_IMODE(entry.info.st_mode) & ~0o222, entry.rel)
    tree.chmod(stat.S_IMODE(tree.stat().st_mode) & ~0o222)


def writable(tree: Path) -> None:
    """Give the owner write access back under ``tree`` (so it can be cleaned up). The
    judge wrote there: every entry is reached through descriptors and changed only
    when it is not a symlink (``sandbox/beneath``), so a link swapped in after the
    walk saw the entry is refused, never followed to a kernel file; at any depth."""
    if not tree.is_dir() or tree.is_symlink():
        return
    tree.chmod(stat.S_IMODE(tree.stat().st_mode) | 0o700)
    try:
        for entry in beneath.walk_at(tree):
            if stat.S_ISLNK(entry.info.st_mode):
                continue
            extra = 0o700 if stat.S_ISDIR(entry.info.st_mode) else 0o600
            try:
                beneath.chmod_at(entry.dir_fd, entry.name,
                                 stat.S_IMODE(entry.info.st_mode) | extra, entry.rel)
            except OSError:
                continue
    except OSError:
        return  # a directory the judge moved mid-walk: its removal makes it writable


def read_verdict(where: Path, judge: str) -> list[Finding] | str:
    """The judge's findings (each stamped with ``judge`` as source), or why there is no
    verdict: missing, a symlink, too big, not JSON, not the documented shape."""
    try:
        data = beneath.read(where, VERDICT_FILE, MAX_VERDICT_BYTES)
    except FileNotFoundError:
        return "produced no verdict"
    except OSError:
        return f"left a {VERDICT_FILE} that is not a regular file"
    if len(data) > MAX_VERDICT_BYTES:
        return f"left a {VERDICT_FILE} over {MAX_VERDICT_BYTES} bytes"
    try:
        verdict = JudgeVerdict.model_validate(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, ValidationError):
        return f"left a {VERDICT_FILE} that is not a valid verdict"
    findings = [f.model_copy(update={"source": judge}) for f in verdict.findings]
    if verdict.verdict == "block" and not any(f.blocking for f in findings):
        findings.append(Finding(severity="blocking", source=judge,
                                summary="The judge concluded `block` without a blocking "
                                        "finding."))
    return findings
