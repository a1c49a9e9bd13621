"""A target's false-credit budget over its whole history (issue 47), with the gate's code.

Each target lives through ``runs`` null runs spread over ``issues`` issues (runs of one
issue follow each other, issues interleave); run k of the target gets its alpha from
the real allocation rule (``alpha_budget.run_alpha``: every run before it looked, so
holds its share), and each of its submissions (a fresh null candidate each, up to
``submissions``, stopping at a credit) is judged by the real gate
(``gate.judge_sequentially`` at the run's alpha: ``plan_for``'s looks, shares and the
scaled ``max_pairs``) over paired differences drawn from a normal law with sd 1 (a
candidate with no true gain; baseline 1, direction max, so the gate's 0.5 % minimum is
0.005 sd). The figure is the share of targets with at least one false credit (a false
ready PR), set against the budget and against the per-run rule (every run a fresh
``1 - confidence``).

Power: one first submission of a candidate whose true gain is 1.5 and 2.5 paired sd,
at the run indexes ``POWER_AT``: the credit rate and the pairs used, against the
contract's ``max_pairs`` scaled for the run's alpha.

    python bench/target_budget.py [--targets N] [--runs 300] [--issues 30] [--power N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from outerloop import alpha_budget  # noqa: E402
from outerloop.attempt.gate import Side, judge_sequentially, plan_for  # noqa: E402
from outerloop.contract import Benchmark  # noqa: E402
from outerloop.vocabulary import GateVerdict  # noqa: E402

POWER_AT = (1, 10, 30, 100, 300, 1000)
"""Run indexes (holders before it, plus one) whose first submission's power is shown."""
EFFECTS_SD = (1.5, 2.5)


def benchmark(confidence: float = 0.99) -> Benchmark:
    return Benchmark.model_validate({"name": "synthetic", "command": "true", "metric": "m",
                                     "direction": "max", "confidence": confidence})


def pair_of(rng: random.Random, gain_sd: float) -> tuple[Side, Side]:
    """One pair whose difference is ``gain_sd + N(0, 1)`` (sides printed to 9 places)."""
    base = 1.0 + rng.gauss(0.0, 0.5 ** 0.5)
    cand = 1.0 + gain_sd + rng.gauss(0.0, 0.5 ** 0.5)
    return Side(Decimal(f"{base:.9f}")), Side(Decimal(f"{cand:.9f}"))


@dataclass
class Run:
    credited: bool
    pairs: int
    submissions: int


def one_run(bench: Benchmark, alpha: float | None, submissions: int, gain_sd: float,
            rng: random.Random) -> Run:
    pairs = 0
    for number in range(1, submissions + 1):
        judged = judge_sequentially(bench, number, lambda _u, _first: pair_of(rng, gain_sd),
                                     run_alpha=alpha)
        pairs += judged.look.pairs if judged.look is not None else 0
        if judged.verdict == GateVerdict.IMPROVED:
            return Run(True, pairs, number)
    return Run(False, pairs, submissions)


@dataclass
class History:
    targets: int = 0
    false_targets: int = 0
    false_runs: int = 0
    runs: int = 0
    pairs: int = 0
    first_false_at: list[int] = field(default_factory=list)
    spent: float = 0.0


def target_history(bench: Benchmark, runs: int, issues: int, submissions: int,
                   budgeted: bool, rng: random.Random, into: History) -> None:
    """One target's ``runs`` null runs over ``issues`` issues, in admission order."""
    budget = 1.0 - bench.confidence
    order = [issue for issue in range(issues) for _ in range(-(-runs // issues))][:runs]
    rng.shuffle(order)  # the issues' runs interleave; the rule sees only the target's order
    credited_at = None
    for index in range(1, len(order) + 1):
        alpha = alpha_budget.run_alpha(budget, index - 1) if budgeted else None
        into.spent += alpha if alpha is not None else budget
        done = one_run(bench, alpha, submissions, 0.0, rng)
        into.runs += 1
        into.pairs += done.pairs
        if done.credited:
            into.false_runs += 1
            credited_at = credited_at or index
    into.targets += 1
    if credited_at is not None:
        into.false_targets += 1
        into.first_false_at.append(credited_at)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a target's false-credit budget")
    parser.add_argument("--targets", type=int, default=400)
    parser.add_argument("--baseline-targets", type=int, default=40,
                        help="targets under the per-run rule, for comparison")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--issues", type=int, default=30)
    parser.add_argument("--submissions", type=int, default=3)
    parser.add_argument("--power", type=int, default=300)
    parser.add_argument("--seed", type=int, default=47)
    args = parser.parse_args(argv)
    print(render(args), flush=True)
    return 0


def render(args: argparse.Namespace) -> str:
    bench = benchmark()
    budget = 1.0 - bench.confidence
    rng = random.Random(args.seed)
    lines = [f"target budget: {args.runs} null runs per target over {args.issues} issues, "
             f"up to {args.submissions} submissions per run (a fresh null each), paired "
             f"sd 1, confidence {bench.confidence} (budget {budget:g}), share exponent "
             f"{alpha_budget.DECAY}"]
    started = time.monotonic()
    for budgeted, count in ((True, args.targets), (False, args.baseline_targets)):
        seen = History()
        for _ in range(count):
            target_history(bench, args.runs, args.issues, args.submissions, budgeted, rng,
                           seen)
        rule = "per-target budget" if budgeted else "per-run alpha (before issue 47)"
        spent = seen.spent / max(1, seen.targets)
        lines.append(f"  {rule}: targets with a false ready PR {seen.false_targets}/"
                     f"{seen.targets} = {seen.false_targets / max(1, seen.targets):.2%} "
                     f"(bound: the alphas of a target's runs sum to {spent:.4g}); false "
                     f"runs {seen.false_runs}/{seen.runs}; pairs per run "
                     f"{seen.pairs / max(1, seen.runs):.2f}; first false credit at run "
                     f"{sorted(seen.first_false_at)[:10]}")
    lines.append(f"  ({time.monotonic() - started:.0f} s)")
    lines.append("run alphas and caps: " + ", ".join(
        f"run {k}: {alpha_budget.run_alpha(budget, k - 1):.2g} "
        f"(max_pairs {plan_for(bench, 1, alpha_budget.run_alpha(budget, k - 1)).sizes[-1]})"
        for k in POWER_AT))
    lines.append(f"power: one first submission, {args.power} trials per cell (credited, mean "
                 f"pairs; the contract's max_pairs {bench.max_pairs} at alpha {budget:g}, "
                 f"scaled for the run's)")
    for gain in EFFECTS_SD:
        cells = []
        for k in (None, *POWER_AT):
            alpha = None if k is None else alpha_budget.run_alpha(budget, k - 1)
            done = [one_run(bench, alpha, 1, gain, rng) for _ in range(args.power)]
            rate = sum(d.credited for d in done) / len(done)
            mean = sum(d.pairs for d in done) / len(done)
            cells.append(f"{'per-run' if k is None else f'run {k}'} {rate:.0%} ({mean:.1f})")
        lines.append(f"  {gain} sd: " + ", ".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
