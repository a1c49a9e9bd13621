"""tinysgd's world: how its points and labels are drawn, from ``data/world.json``.

The world (the true weights of the logistic model, the features' spreads) is in
``data/world.json``, which is **eval-only**: no agent-side process (a session, a launch,
the benchmark's command) ever sees it; only the trusted scorer reads it. Knowing the
world is knowing the answer, so a trainer must learn it from ``data/train.csv``.

``python world.py`` prints the training set (``data/train.csv``) from the world: a
maintainer regenerates it after changing the world. This file holds no secret.
"""

from __future__ import annotations

import csv
import json
import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORLD = HERE / "data" / "world.json"
TRAIN_POINTS = 80
TRAIN_SEED = 20240521
"""The training set is fixed: the same 80 points for every evaluation."""

Row = tuple[float, ...]


def load_world(path: Path = WORLD) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(true weights, feature spreads) from ``path``; a missing world is an error that
    says where the world lives."""
    try:
        world = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        print(f"error: {path.relative_to(HERE) if path.is_relative_to(HERE) else path} is missing: it is eval-only (only the trusted scorer "
              f"reads it); try a trainer with `python produce.py`", file=sys.stderr)
        raise SystemExit(2) from None
    return tuple(map(float, world["weights"])), tuple(map(float, world["scales"]))


def draw(rng: random.Random, count: int, weights: tuple[float, ...],
         scales: tuple[float, ...]) -> tuple[list[Row], list[int]]:
    """``count`` points of the world and their labels, drawn from ``rng``."""
    rows, labels = [], []
    for _ in range(count):
        row = tuple(rng.gauss(0.0, scale) for scale in scales)
        z = sum(w * x for w, x in zip(weights, row, strict=True))
        rows.append(row)
        labels.append(1 if rng.random() < 1.0 / (1.0 + math.exp(-z)) else 0)
    return rows, labels


def main() -> int:
    weights, scales = load_world()
    rows, labels = draw(random.Random(TRAIN_SEED), TRAIN_POINTS, weights, scales)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow([f"x{i + 1}" for i in range(len(weights))] + ["label"])
    for row, label in zip(rows, labels, strict=True):
        writer.writerow([repr(round(x, 9)) for x in row] + [label])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
