"""tinysgd benchmark: train the model on a random split of the data, print its test loss.

Usage: ``python evaluate.py``. The seed comes from the environment variable
``TINYSGD_SEED`` (default 1): it picks which 80 of the 400 points are the training set
(the other 320 are the test set) *and* seeds the trainer, so the result moves with the
seed the way a trained model's does. The same seed always gives the same number. The
last stdout line is the result, one JSON object: ``{"test_loss": 0.682213}`` (the mean
log loss on the test points; lower is better).

The evaluator, not the trainer, splits the data and scores the model, so a trainer can
only win by fitting better. ``evaluate(seed, **variant)`` is the same measurement for
callers in the same process (outerloop's ``bench/gate_trials.py``): ``variant`` passes
keyword arguments to ``trainer.train``, as a changed constant in ``trainer/sgd.py``
would (``epochs=12`` is ``EPOCHS = 12``).
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from functools import cache
from typing import Any

from trainer import Model, train

SEED_ENV = "TINYSGD_SEED"
METRIC = "test_loss"
POINTS = 400
TRAIN_POINTS = 80
DATA_SEED = 20240521
SCALES = (1.0, 1.0, 1.0, 0.1, 0.1)
"""The spread of each feature: the last two are small, so plain SGD learns their
(large) weights slowly."""
TRUE_WEIGHTS = (0.8, -0.6, 0.4, 12.0, -10.0)

Row = tuple[float, ...]


@cache
def dataset() -> tuple[tuple[Row, ...], tuple[int, ...]]:
    """The fixed data set: ``POINTS`` rows and labels drawn from a logistic model."""
    rng = random.Random(DATA_SEED)
    rows, labels = [], []
    for _ in range(POINTS):
        row = tuple(rng.gauss(0.0, scale) for scale in SCALES)
        z = sum(w * x for w, x in zip(TRUE_WEIGHTS, row, strict=True))
        rows.append(row)
        labels.append(1 if rng.random() < 1.0 / (1.0 + math.exp(-z)) else 0)
    return tuple(rows), tuple(labels)


def log_loss(model: Model, rows: list[Row], labels: list[int]) -> float:
    """The mean negative log likelihood of ``labels`` under ``model``."""
    total = 0.0
    for row, label in zip(rows, labels, strict=True):
        z = model.logit(row)
        total += math.log1p(math.exp(-z if label else z))
    return total / len(rows)


def evaluate(seed: int, **variant: Any) -> float:
    """The test loss under ``seed``, rounded to 6 decimals (what the CLI prints)."""
    rows, labels = dataset()
    order = list(range(POINTS))
    random.Random(f"split:{seed}").shuffle(order)
    train_at, test_at = order[:TRAIN_POINTS], order[TRAIN_POINTS:]
    model = train([rows[i] for i in train_at], [labels[i] for i in train_at], seed, **variant)
    return round(log_loss(model, [rows[i] for i in test_at], [labels[i] for i in test_at]), 6)


def result_line(value: float) -> str:
    """The JSON line the CLI prints last."""
    return json.dumps({METRIC: value})


def read_seed() -> int:
    raw = os.environ.get(SEED_ENV, "1")
    try:
        return int(raw)
    except ValueError:
        print(f"error: {SEED_ENV}={raw!r} is not an integer", file=sys.stderr)
        raise SystemExit(2) from None


def main() -> int:
    seed = read_seed()
    print(f"tinysgd: logistic regression, {TRAIN_POINTS} training and "
          f"{POINTS - TRAIN_POINTS} test points, seed {seed}", flush=True)
    print(result_line(evaluate(seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
