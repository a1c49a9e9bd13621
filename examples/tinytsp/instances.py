"""tinytsp's instances and how a tour is measured: shared by the benchmark's scripts.

The instances are public inputs: they come from the seed ``TINYTSP_SEED`` (default 1),
which the solver's process may read; the same seed always yields the same instances.
A tour is checked (a permutation of the points) and measured here, by the trusted
scorer (``score.py``) in the gate, never by the solver.
"""

from __future__ import annotations

import math
import os
import random
import sys

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


def instances(bench: str, seed: int) -> list[list[Point]]:
    """The ``INSTANCES`` instances of ``bench`` under ``seed``."""
    _, make_instance = BENCHES[bench]
    rng = random.Random(seed)
    return [make_instance(rng) for _ in range(INSTANCES)]


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
