"""``[review]``: can the panel give a verdict on this target?

A dry judge run, not a reading of the settings: one real judge session, through the
same harness seam and sandbox as the panel (``attempt/panel.py``), on fresh read-only
checkouts of each target's default branch (``base/``) and of the same tree plus one
fixed line of text (``candidate/``), with the judge's own prompt and a short time
limit. No ``verdict.json`` is a failure quoting the session's reason and the file it
wrote (a scripted judge that tests for another target's files, a model key that is
refused). Its files stay under ``cache/doctor/review/`` until the next doctor run.

No judges (``judges = 0``) and no ``[review]`` section at all are warnings: every
pull request then opens as a draft, or gets the defaults, and the operator should
know which.
"""

from __future__ import annotations

import time

from outerloop.config import Settings, override_variables, read_file_settings
from outerloop.doctor.base import Check, Options, fail, not_checked, ok, took, warn
from outerloop.doctor.contracts import TargetContract, read_contracts
from outerloop.harness.base import Harness
from outerloop.text import cap

DRY_RUN_MINUTES = 2
MAX_REASON_CHARS = 400
REVIEW_DIR = "cache/doctor/review"
PROBE_FILE = "outerloop-doctor-probe.txt"
PROBE_TEXT = "A dry run of the review panel by outerloop doctor.\n"
DIFF = (f"diff --git a/{PROBE_FILE} b/{PROBE_FILE}\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/{PROBE_FILE}\n@@ -0,0 +1 @@\n+{PROBE_TEXT}")
REPORT = ("outerloop doctor's dry run of the review panel: the candidate adds one line of "
          "text and nothing was measured. Read what you need and write your verdict; any "
          "verdict will do.")
JUDGE_FIX = ("make the judge write verdict.json on any target: a scripted judge's shell "
             "steps must hold for this target's files (docs/scripted-agent.md), a model "
             "judge needs its key and endpoint; or set [review] judges = 0 (every PR then "
             "opens as a draft)")


def review_configured(settings: Settings) -> bool:
    """Whether the operator wrote a ``[review]`` (in the file or the environment)."""
    prefix = "OUTERLOOP_REVIEW_"
    return "review" in read_file_settings(settings.home) or any(
        name.startswith(prefix) for name in override_variables())


def check_review(settings: Settings, options: Options) -> list[Check]:
    from outerloop.errors import OuterloopError
    from outerloop.harness.factory import make_judge_harness

    configured = review_configured(settings)
    if settings.review.judges == 0:
        return [warn("review panel", "no judges ([review] judges = 0): every pull request "
                     "opens as a draft", "set [review] judges = 1 with a judge that gives "
                     "a verdict on any target (docs/operate.md)")]
    try:
        harness = make_judge_harness(settings)
    except OuterloopError as exc:
        problem, _, fix = str(exc).partition("; fix: ")
        if not configured:
            return [warn("review panel", f"no [review] in outerloop.toml, and the default "
                         f"judge cannot start ({problem}): every pull request opens as a "
                         f"draft", fix or "add a [review] section (docs/operate.md)")]
        return [fail("review panel", f"the judges cannot start: {problem}",
                     fix or "fix [review] in outerloop.toml")]
    checks = [] if configured else [warn(
        "review panel", f"no [review] in outerloop.toml: the panel is "
        f"{settings.review.judges} judge(s) of the agents' kind "
        f"({settings.harness.kind})", "write [review] judges and kind (and script for a "
        "scripted judge) to say what reads each pull request (docs/operate.md)")]
    if options.quick:
        return [*checks, not_checked("review panel", "a dry judge run")]
    reads = read_contracts(settings)
    for read in reads:
        name = "review panel" if len(reads) == 1 else f"review panel ({read.repo})"
        if read.contract is None or read.head is None:
            checks.append(warn(name, f"not tried on {read.repo}: its contract could not be "
                               f"read (see contracts)", "fix the contracts check first"))
            continue
        try:
            checks.append(dry_run(settings, harness, read, name))
        except OuterloopError as exc:
            checks.append(fail(name, f"the dry run could not be prepared on {read.repo}: "
                               f"{exc}", "fix the forge or the home (see the lines above)"))
    return checks


def dry_run(settings: Settings, harness: Harness, read: TargetContract, name: str) -> Check:
    """One judge session over ``read``'s default branch plus ``PROBE_FILE``."""
    from outerloop.attempt.panel import (
        VERDICT_FILE,
        hide_instructions,
        read_only,
        read_verdict,
        writable,
    )
    from outerloop.forge.factory import make_forge
    from outerloop.harness.base import SessionLimits
    from outerloop.run.paths import RunPaths
    from outerloop.run.render import JudgeInputs, render_judge_brief
    from outerloop.run.workspace import checkout
    from outerloop.sandbox import beneath, reaper

    assert read.contract is not None and read.head is not None
    started = time.monotonic()
    contract, benchmark = read.contract, read.contract.benchmarks[0]
    root = settings.home / REVIEW_DIR / read.repo.replace("/", "--")
    if root.exists():
        beneath.remove(root.parent, root.name)
    paths = RunPaths(root)
    make_forge(settings).fetch(read.repo, paths.kernel, read.head)
    where, home = root / "judge", root / "judge-home"
    where.mkdir(parents=True)
    home.mkdir(mode=0o700)
    for side in ("base", "candidate"):
        checkout(paths, read.head, where / side, contract.eval_only)
    (where / "candidate" / PROBE_FILE).write_text(PROBE_TEXT, encoding="utf-8")
    for side in ("base", "candidate"):
        hide_instructions(where / side)
        read_only(where / side)
    prompt = render_judge_brief(JudgeInputs(
        benchmark=benchmark.name, metric=benchmark.metric, direction=benchmark.direction,
        seed_env=benchmark.seed_env, seeds=1, baseline="(dry run)", candidate="(dry run)",
        delta="(dry run)", scope=[*contract.scope.allowed, *contract.scope.shared], tamper=[],
        report=REPORT, diff=DIFF, verdict_file=VERDICT_FILE, max_findings=1))
    (root / "judge-prompt.md").write_text(prompt, encoding="utf-8")
    limits = SessionLimits(max_turns=settings.review.max_turns,
                           minutes=min(settings.review.minutes, DRY_RUN_MINUTES))
    try:
        with reaper.tree_ends():
            result = harness.run(prompt, where, home, None, limits)
        verdict = read_verdict(where, "judge-1")
    finally:
        writable(where)
    if isinstance(verdict, str):
        why = cap(" ".join((result.error_detail or result.refusal or result.final_text
                            or "no detail").split()), MAX_REASON_CHARS)
        files = result.transcript_path or str(where)
        return fail(name, f"judge-1 {verdict} on a dry run over {read.repo} (session ended "
                    f"{result.stop_reason}: {why}); see {files}{took(started)}", JUDGE_FIX)
    word = "block" if any(f.blocking for f in verdict) else "approve"
    return ok(name, f"judge-1 gave a verdict ({word}) on a dry run over {read.repo} "
              f"({settings.review.judges} judge(s), {harness_name(settings)}){took(started)}")


def harness_name(settings: Settings) -> str:
    kind = settings.review.kind or settings.harness.kind
    script = settings.review.script if kind == "scripted" else None
    return f"scripted {settings.path(script)}" if script else kind
