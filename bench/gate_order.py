"""The gate's order-effect replay (issue 47, point 3): false credit and power, before and
after order-balanced couples, with the gate's own code.

A timed benchmark may favour whichever side runs second in its pair job (a warm page
cache, node-local data): that side measures ``e`` better. The model: a timed metric
(seconds, lower is better) of ``SECONDS``, each eval with its own gaussian noise of sd
``SIGMA / sqrt(2)`` (so a pair's difference has sd ``SIGMA``, "1 paired sd"), the side
run second ``e`` faster; a candidate ``g`` faster than the base. Each eval is printed to
6 decimals, as a JSON line would be, and the real gate judges it
(``gate.judge_sequentially``, the kernel's looks, alphas and hidden orders from a fresh
salt per run):

- **before**: pairs alone, one per seed, its order drawn (``coupled=False``: the gate
  up to issue 47);
- **after**: couples, two pair jobs per seed, one in each order (the gate now).

Printed: false credit of a null (``g = 0``) at ``e`` = 0, 2, 5 and 10 paired sd, each
against the run's bound (goal: at most ``1 - confidence``), and the power cost: credit
rate, units (pairs or couples), pair jobs and evals to a verdict for gains of 1.5 and
2.5 paired sd, before and after, for two noise shapes: *timed* (each pair job its own
noise: a couple's two pairs average theirs) and *seeded* (the noise a function of the
seed: a couple's two pairs read alike, so a couple is worth one pair and costs two).

    python bench/gate_order.py [--runs 2000] [--power 1000] [--confidence 0.99]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from outerloop.attempt.gate import Side, judge_sequentially
from outerloop.attempt.sequential import submit_alpha
from outerloop.contract import Benchmark
from outerloop.vocabulary import GateVerdict

SECONDS = 20.0
SIGMA = 1.0
"""The sd of a pair's difference (the gate's 0.5 % of ``SECONDS`` is 0.1 of it)."""
ORDER_EFFECTS_SD = (0.0, 2.0, 5.0, 10.0)
POWER_GAINS_SD = (1.5, 2.5)
DESIGNS = ("before", "after")
NOISES = ("timed", "seeded")
Measure = Callable[[int, bool], tuple[Side, Side]]


def benchmark(confidence: float) -> Benchmark:
    return Benchmark.model_validate({"name": "timed", "command": "python run.py",
                                     "metric": "seconds", "direction": "min",
                                     "seed_env": "SEED", "confidence": confidence})


def timed_measure(e_sd: float, gain_sd: float, noise: str, rng: random.Random) -> Measure:
    """``measure(unit, base_first)`` of the model: each eval its own noise (``timed``)
    or the unit's (``seeded``: drawn once per unit, the same in both of its pairs)."""
    each = SIGMA / 2 ** 0.5
    second = Decimal(f"{e_sd * SIGMA:.6f}")
    drawn: dict[int, tuple[float, float]] = {}

    def noises(unit: int) -> tuple[float, float]:
        if noise == "timed":
            return rng.gauss(0.0, each), rng.gauss(0.0, each)
        if unit not in drawn:
            drawn[unit] = (rng.gauss(0.0, each), rng.gauss(0.0, each))
        return drawn[unit]

    def measure(unit: int, base_first: bool) -> tuple[Side, Side]:
        base_noise, cand_noise = noises(unit)
        base = Decimal(f"{SECONDS + base_noise:.6f}")
        cand = Decimal(f"{SECONDS - gain_sd * SIGMA + cand_noise:.6f}")
        if base_first:
            return Side(base), Side(cand - second)
        return Side(base - second), Side(cand)

    return measure


@dataclass(frozen=True)
class Counted:
    """``runs`` first submissions of one case: credited, units and pair jobs to a verdict."""

    runs: int
    credited: int
    mean_units: float
    mean_jobs: float

    @property
    def rate(self) -> float:
        return self.credited / self.runs if self.runs else 0.0


def count(bench: Benchmark, design: str, runs: int, rng: random.Random, *, e_sd: float,
          gain_sd: float, noise: str = "timed") -> Counted:
    """``runs`` first submissions judged by the gate, each under a fresh salt."""
    coupled = design == "after"
    credited = units = 0
    for _ in range(runs):
        salt = f"{rng.getrandbits(64):016x}"
        judged = judge_sequentially(bench, 1, timed_measure(e_sd, gain_sd, noise, rng),
                                    salt=salt, coupled=coupled)
        assert judged.look is not None, judged.detail
        credited += judged.verdict == GateVerdict.IMPROVED
        units += judged.look.pairs
    jobs = units * (2 if coupled else 1)
    return Counted(runs, credited, units / runs if runs else 0.0, jobs / runs if runs else 0.0)


@dataclass(frozen=True)
class OrderRow:
    e_sd: float
    design: str
    counted: Counted
    bound: float
    """The run's bound, ``1 - confidence``."""
    p_value: float
    """The chance of this many credits or more if the true rate were the bound."""


@dataclass(frozen=True)
class OrderPowerRow:
    gain_sd: float
    noise: str
    design: str
    counted: Counted


@dataclass
class OrderReport:
    confidence: float
    runs: int
    false_credit: list[OrderRow]
    power: list[OrderPowerRow]

    @property
    def failed(self) -> bool:
        """A false credit of the gate as it is (couples) significantly above its bound."""
        return any(row.design == "after" and row.p_value < 0.001 for row in self.false_credit)


def replay(confidence: float, runs: int, power_runs: int, seed: int,
           tail: Callable[[int, int, float], float]) -> OrderReport:
    """The order-effect figures: ``runs`` nulls per (effect, design), ``power_runs``
    submissions per (gain, noise, design); ``tail`` the binomial upper tail."""
    bench = benchmark(confidence)
    alpha = round(1.0 - confidence, 12)
    rows = []
    for e_sd in ORDER_EFFECTS_SD:
        for design in DESIGNS:
            rng = random.Random(f"{seed}:order:{e_sd}:{design}")
            counted = count(bench, design, runs, rng, e_sd=e_sd, gain_sd=0.0)
            rows.append(OrderRow(e_sd, design, counted, alpha,
                                 tail(counted.credited, counted.runs, alpha)))
    power = []
    for gain_sd in POWER_GAINS_SD:
        for noise in NOISES:
            for design in DESIGNS:
                rng = random.Random(f"{seed}:order-power:{gain_sd}:{noise}:{design}")
                power.append(OrderPowerRow(gain_sd, noise, design, count(
                    bench, design, power_runs, rng, e_sd=0.0, gain_sd=gain_sd, noise=noise)))
    return OrderReport(confidence, runs, rows, power)


def render(report: OrderReport) -> list[str]:
    alpha = round(1.0 - report.confidence, 12)
    lines = [f"order effect: a timed null (seconds, min) whose side run second in its pair "
             f"job is e faster; e in paired sd; {report.runs} first submissions each; "
             f"bound {alpha:.2%} per run (a first submission may spend "
             f"{submit_alpha(alpha, 1):.2%})"]
    for row in report.false_credit:
        c = row.counted
        design = ("before (pairs alone, order drawn)" if row.design == "before"
                  else "after (couples, one of each order)")
        lines.append(f"  e {row.e_sd:g} sd, {design}: false credit {c.credited}/{c.runs} = "
                     f"{c.rate:.2%} (binomial p = {row.p_value:.3g}), {c.mean_units:.2f} "
                     f"units, {c.mean_jobs:.2f} pair jobs per decision")
    lines.append("power cost: gains of 1.5 and 2.5 paired sd, no order effect; timed: each "
                 "pair job its own noise; seeded: the noise follows the seed (a couple's "
                 "two pairs read alike); evals = 2 per pair job")
    for row in report.power:
        c = row.counted
        unit = "pairs" if row.design == "before" else "couples"
        lines.append(f"  {row.gain_sd:g} sd, {row.noise}, {row.design}: credited "
                     f"{c.rate:.1%}, {c.mean_units:.2f} {unit}, {c.mean_jobs:.2f} pair jobs "
                     f"({2 * c.mean_jobs:.1f} evals) to a verdict")
    return lines


def _binomial_tail(observed: int, runs: int, rate: float) -> float:
    import math

    if observed <= 0:
        return 1.0
    terms = (math.exp(math.lgamma(runs + 1) - math.lgamma(k + 1) - math.lgamma(runs - k + 1)
                      + k * math.log(rate) + (runs - k) * math.log1p(-rate))
             for k in range(observed, runs + 1))
    return min(1.0, math.fsum(terms))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the gate under an order effect")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--power", type=int, default=1000)
    parser.add_argument("--confidence", type=float, default=0.99)
    parser.add_argument("--seed", type=int, default=47)
    args = parser.parse_args(argv)
    report = replay(args.confidence, args.runs, args.power, args.seed, _binomial_tail)
    print("\n".join(render(report)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
