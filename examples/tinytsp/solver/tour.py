"""Tour construction for tinytsp.

Baseline: nearest neighbour. Start at point 0 and always move to the closest point
not yet visited. Fast, and typically about 25% longer than an optimal tour.
"""

from __future__ import annotations

import math

Point = tuple[float, float]


def nearest_neighbour(points: list[Point]) -> list[int]:
    """Greedy tour from point 0: always go to the closest unvisited point."""
    if not points:
        return []
    unvisited = set(range(1, len(points)))
    tour = [0]
    while unvisited:
        here = points[tour[-1]]
        nearest = min(unvisited, key=lambda j: (math.dist(here, points[j]), j))
        unvisited.remove(nearest)
        tour.append(nearest)
    return tour


def solve(points: list[Point]) -> list[int]:
    """A closed tour through ``points``, as a permutation of their indices."""
    return nearest_neighbour(points)
