"""tinytsp benchmark: solve random travelling-salesman instances, print the mean length.

Usage: ``python evaluate.py --bench tour|spread [--json]``. The seed comes from the
environment variable ``TINYTSP_SEED`` (default 1); the same seed always yields the same
instances. Progress goes to stdout first; the last stdout line is the result (one JSON
object with ``--json``).

The evaluator, not the solver, checks each tour and measures its length, so a solver
can only win by finding shorter tours.

Benchmarks:
  tour    25 instances of 60 points uniform in the unit square;
          metric ``mean_tour_length`` (lower is better).
  spread  25 instances of 60 points spread over 5 tight clusters;
          metric ``mean_spread_length`` (lower is better).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

from solver import solve

SEED_ENV = "TINYTSP_SEED"
INSTANCES = 25
POINTS = 60
CLUSTERS = 5
CLUSTER_SIGMA = 0.05

Point = tuple[float, float]


def uniform_instance(rng: random.Random) -> list[Point]:
    """Points uniform in the unit square."""
    return [(rng.random(), rng.random()) for _ in range(POINTS)]


def clustered_instance(rng: random.Random) -> list[Point]:
    """Points around a few random centres, clipped to the unit square."""
    centres = [(rng.random(), rng.random()) for _ in range(CLUSTERS)]
    points = []
    for index in range(POINTS):
        cx, cy = centres[index % CLUSTERS]
        x = min(1.0, max(0.0, rng.gauss(cx, CLUSTER_SIGMA)))
        y = min(1.0, max(0.0, rng.gauss(cy, CLUSTER_SIGMA)))
        points.append((x, y))
    return points


BENCHES = {
    "tour": ("mean_tour_length", uniform_instance),
    "spread": ("mean_spread_length", clustered_instance),
}


def tour_length(points: list[Point], tour: list[int]) -> float:
    """Length of the closed tour visiting ``points`` in the order ``tour``."""
    return sum(math.dist(points[tour[i - 1]], points[tour[i]]) for i in range(len(tour)))


def check_tour(tour: object, n: int) -> list[int]:
    """``tour`` if it visits every one of ``n`` points exactly once, else exit 1."""
    if not isinstance(tour, (list, tuple)) or sorted(tour) != list(range(n)):
        print("error: solve() must return a permutation of range(len(points))",
              file=sys.stderr)
        raise SystemExit(1)
    return list(tour)


def read_seed() -> int:
    raw = os.environ.get(SEED_ENV, "1")
    try:
        return int(raw)
    except ValueError:
        print(f"error: {SEED_ENV}={raw!r} is not an integer", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tinytsp benchmark")
    parser.add_argument("--bench", choices=sorted(BENCHES), default="tour")
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON object on the last line")
    args = parser.parse_args(argv)
    metric, make_instance = BENCHES[args.bench]
    rng = random.Random(read_seed())
    print(f"tinytsp: bench {args.bench}, {INSTANCES} instances of {POINTS} points",
          flush=True)
    started = time.perf_counter()
    lengths = []
    for _ in range(INSTANCES):
        points = make_instance(rng)
        tour = check_tour(solve(list(points)), len(points))
        lengths.append(tour_length(points, tour))
    elapsed = time.perf_counter() - started
    mean = round(sum(lengths) / len(lengths), 6)
    print(f"solved {INSTANCES} instances in {elapsed:.2f} s", flush=True)
    if args.json:
        print(json.dumps({metric: mean, "instances": INSTANCES}))
    else:
        print(f"{metric}: {mean}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
