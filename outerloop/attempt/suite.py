"""The suite gate: a candidate must not make a sibling benchmark worse.

Code under ``scope.shared`` is used by more than one benchmark, so a change there that
improves the run's benchmark may quietly cost another one. When a submission touches
it, every sibling benchmark of the suite (the contract's ``suite`` list, or every other
benchmark; never a self-reported one) is measured too; a guard benchmark
(``regression: true``) is measured beside every submission, touching ``shared`` or not.
Each is measured with its own command from the base tree, on base and candidate, under
the submission's hidden seeds (the same seed on both sides). A sibling
whose mean got worse, in its direction, by more than its floor (``contract.floor``; a
zero floor means any worsening) turns the verdict into ``suite-regression``: no PR, and
the agent is woken with the numbers. A sibling that cannot be measured is an
``eval-error``: an unmeasured suite vouches for nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from outerloop.attempt.gate import Side, gain
from outerloop.contract import Benchmark, Contract, floor, touches_shared
from outerloop.numfmt import format_number, format_pair, verdict_digits
from outerloop.vocabulary import GateVerdict


def siblings_to_measure(contract: Contract, benchmark: Benchmark,
                        changed: Iterable[str]) -> list[tuple[int, Benchmark]]:
    """(index in the contract, sibling) for each sibling the suite gate must measure:
    the guards (``regression: true``) always; the suite's other benchmarks (the
    contract's ``suite`` list, or all) when ``changed`` touches ``scope.shared``."""
    shared = touches_shared(contract, changed)
    suite = contract.suite_names
    return [(index, other) for index, other in enumerate(contract.benchmarks)
            if other.name != benchmark.name and not other.self_reported
            and (other.regression
                 or (shared and (suite is None or other.name.casefold() in suite)))]


@dataclass(frozen=True)
class SuiteResult:
    """What the suite gate found: ``verdict`` is None when every sibling held."""

    verdict: GateVerdict | None
    detail: str


def check_suite(siblings: Mapping[str, Benchmark],
                pairs: Mapping[str, Sequence[tuple[Side, Side]]]) -> SuiteResult:
    """Judge each sibling's pairs (measured on base and candidate with shared seeds)."""
    errors: list[str] = []
    worse: list[str] = []
    held: list[str] = []
    for name, measured in pairs.items():
        sibling = siblings[name]
        failed = [f"{name} {side}: {s.error}" for b, c in measured
                  for side, s in (("baseline", b), ("candidate", c)) if s.error]
        if failed or not measured:
            errors.extend(failed or [f"{name}: not measured"])
            continue
        n = Decimal(len(measured))
        base = sum((b.value for b, _ in measured if b.value is not None), Decimal(0)) / n
        cand = sum((c.value for _, c in measured if c.value is not None), Decimal(0)) / n
        change = gain(sibling.direction, base, cand)
        allowed = floor(sibling, base)
        digits = verdict_digits(base, cand, sibling.display_digits)
        shown_base, shown_cand = format_pair(base, cand, sibling.display_digits)
        line = f"{name} ({sibling.metric}): {shown_base} -> {shown_cand}"
        if -change > allowed:
            worse.append(f"{line}, worse by {format_number(-change, digits)} > floor "
                         f"{format_number(allowed, digits)}")
        else:
            held.append(line)
    if errors:
        return SuiteResult(GateVerdict.EVAL_ERROR, "suite: " + "; ".join(errors))
    if worse:
        return SuiteResult(GateVerdict.SUITE_REGRESSION, "a sibling benchmark got worse: "
                           + "; ".join(worse))
    return SuiteResult(None, "siblings held: " + "; ".join(held) if held else "")
