"""The verdict as the agent and the PR read it (pure).

One verdict type from the gate on: the gate's ``Judgement`` is recorded once as the
ledger's ``ev.Verdict`` (``verdict_record``), and every view is a projection of that
record (``verdict_view``), never a judgement rebuilt from its strings."""

from __future__ import annotations

from decimal import Decimal

from outerloop.attempt.gate import Judgement, Side, credit_threshold
from outerloop.attempt.in_process import is_in_process, pr_note
from outerloop.change_sketch import exact_part
from outerloop.contract import Benchmark
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord
from outerloop.numfmt import format_number, verdict_digits
from outerloop.run.number_words import decimal_or_none
from outerloop.run.render import VerdictView
from outerloop.vocabulary import SETTLED_VERDICTS

ALPHA_DIGITS = 2


def verdict_view(bench: Benchmark, told: ev.Verdict,
                 history: list[str] | None = None) -> VerdictView:
    """The recorded verdict ``told`` as the agent and the PR read it: every number at the
    verdict's digits (``numfmt.verdict_digits``: the benchmark's ``display_digits``, 4
    when unset, more when baseline and candidate would read alike), the threshold the
    gain had to clear, whether the measurements were seeded, and the sequential test's
    evidence when it recorded any (pure)."""
    baseline, candidate = decimal_or_none(told.baseline), decimal_or_none(told.candidate)
    digits = verdict_digits(baseline, candidate, bench.display_digits)

    def shown(value: Decimal | None) -> str | None:
        return format_number(value, digits) if value is not None else None

    def number(text: str | None) -> str | None:
        return shown(decimal_or_none(text))

    needed = credit_threshold(bench, baseline) if baseline is not None else None
    evidence = told if told.confidence > 0 else None
    return VerdictView(
        verdict=told.verdict, benchmark=bench.name, metric=bench.metric,
        direction=bench.direction, scale=bench.scale, baseline=shown(baseline),
        candidate=shown(candidate), delta=number(told.delta), seeds=told.seeds,
        detail=told.detail, needed=shown(needed), seeded=bench.seed_env is not None,
        low=number(evidence.low) if evidence else None,
        high=number(evidence.high) if evidence else None,
        noise=number(evidence.sd) if evidence else None,
        confidence=percent(evidence.confidence) if evidence else None,
        spent=format_number(evidence.alpha, ALPHA_DIGITS) if evidence else None,
        submission=told.submission, history=history or [], in_process=pr_note(bench),
        coupled=told.order is not None,
        order=number(told.order), order_low=number(told.order_low),
        order_high=number(told.order_high), order_shown=order_shown(told))


def order_shown(told: ev.Verdict) -> bool:
    """Whether the verdict's order effect is worth a line of its own: larger than the
    half-width of the gain's interval (the couples cancel it from the gain either way,
    but a benchmark whose numbers follow what ran before them deserves a look)."""
    order, low, high = (decimal_or_none(v) for v in (told.order, told.low, told.high))
    if order is None or low is None or high is None:
        return False
    return abs(order) > (high - low) / 2


def percent(confidence: float) -> str:
    """``0.99`` as ``99%`` (``0.995`` as ``99.5%``)."""
    return f"{confidence * 100:.4g}%"


def submissions_history(run: RunRecord, upto: int,
                        display_digits: int | None = None) -> list[str]:
    """One line per settled submission of the run up to ``upto``: its verdict, gain and
    pairs (the PR shows every one, the losing ones included), each gain at its own
    verdict's digits."""
    lines = []
    for number, told in enumerate(run.verdicts[:upto], 1):
        digits = verdict_digits(told.baseline, told.candidate, display_digits)
        delta = decimal_or_none(told.delta)
        gain = f", gain {format_number(delta, digits)}" if delta is not None else ""
        unit = "couples" if told.order is not None else "pairs"
        lines.append(f"submission {number}: {told.verdict}{gain}, {told.seeds} {unit}")
    return lines


def first_look(run: RunRecord, submission: int) -> ev.GateLook | None:
    """The first look of ``submission``'s sequential test on record: the one that
    measured the suite gate's siblings (``GateLook.suite``, ``GateLook.needs``)."""
    return next((seen for seen in run.looks.get(submission, []) if seen.look == 0), None)


def told_view(bench: Benchmark, run: RunRecord, submission: int) -> VerdictView:
    """The view of the run's recorded verdict of submission ``submission`` (1-based),
    with what its suite gate measured (kept while the run is active)."""
    told = run.verdicts[submission - 1]
    view = verdict_view(bench, told, submissions_history(run, submission, bench.display_digits))
    first = first_look(run, submission)
    return view.model_copy(update={"suite": first.suite}) if first and first.suite else view


def _text(value: float) -> str:
    return f"{value:.6g}"


def verdict_record(bench: Benchmark, judged: Judgement, run: RunRecord) -> ev.Verdict:
    """The ledger's record of ``judged``, the verdict of the run's current submission."""
    seen = judged.look
    return ev.Verdict(
        verdict=judged.verdict, benchmark=bench.name,
        baseline=str(judged.baseline) if judged.baseline is not None else None,
        candidate=str(judged.candidate) if judged.candidate is not None else None,
        delta=str(judged.delta) if judged.delta is not None else None,
        seeds=seen.pairs if seen is not None else 0,
        base_sha=run.base_sha or "", seal_sha=run.park_seal or "", detail=judged.detail,
        submission=run.submissions,
        low=_text(seen.low) if seen is not None else None,
        high=_text(seen.high) if seen is not None else None,
        sd=_text(seen.sd) if seen is not None else None,
        alpha=seen.alpha if seen is not None else 0.0, confidence=bench.confidence,
        display_digits=bench.display_digits, in_process=is_in_process(bench),
        change=exact_part(run.changes.get(run.submissions, "")),
        order=str(judged.order.mean) if judged.order is not None else None,
        order_low=_text(judged.order.low) if judged.order is not None else None,
        order_high=_text(judged.order.high) if judged.order is not None else None)


def baseline_failure(pairs: list[tuple[Side, Side]]) -> str | None:
    """Why the base commit could not be measured (after its one retry), or None.

    A baseline that fails is the benchmark's problem, not the agent's: the run ends
    with the reason for the maintainers instead of telling the agent to revise."""
    errors = [base.error for base, _ in pairs if base.error]
    if not errors:
        return None
    return (f"the benchmark failed on the base commit, so nothing could be compared "
            f"(a problem of the target's benchmark, not of this run's change): "
            f"{errors[0]}. Fix the benchmark on the default branch, then open a new issue.")


def same_tree_verdict(run: RunRecord, tree: str) -> str | None:
    """What the agent is told when ``tree`` is exactly an earlier submission's (one the
    gate settled against the run's current base): its verdict, and that nothing was
    measured; else None. A verdict against a base that has since moved (``base_moved``)
    answered another question: the same tree against the new base is measured."""
    for submission, earlier in sorted(run.trees.items()):
        if earlier != tree or submission > len(run.verdicts):
            continue
        told = run.verdicts[submission - 1]
        if told.base_sha and run.base_sha and told.base_sha != run.base_sha:
            continue
        if told.verdict in SETTLED_VERDICTS:
            return (f"Not measured: this tree is exactly submission {submission}'s, which "
                    f"the gate judged {told.verdict} ({told.detail}). Submitting it again "
                    "measures nothing new and spends nothing; change the code first.")
    return None
