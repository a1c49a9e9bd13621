"""Logistic regression trained by plain stochastic gradient descent.

Each step draws one training point at random (with replacement) from the trainer's own
random stream, ``random.Random(seed + RNG_OFFSET)``, and moves the weights against the
log loss's gradient at that point; the learning rate falls linearly from
``LEARNING_RATE`` to 0 over the run. The weights start at 0. Which points are drawn, and
in which order, is all the randomness there is: the final model, and so its test loss,
follows that stream, as most trained models follow theirs.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

EPOCHS = 3
"""Passes over the training set, counted in steps: ``EPOCHS * len(rows)`` draws."""
LEARNING_RATE = 0.2
RNG_OFFSET = 0
"""Added to the seed of the trainer's random stream."""
MAX_LOGIT = 30.0

Row = tuple[float, ...]


@dataclass(frozen=True)
class Model:
    weights: tuple[float, ...]
    bias: float

    def logit(self, row: Row) -> float:
        """The log-odds of label 1 at ``row``, clipped to +-``MAX_LOGIT``."""
        z = self.bias + sum(w * x for w, x in zip(self.weights, row, strict=True))
        return max(-MAX_LOGIT, min(MAX_LOGIT, z))

    def predict(self, row: Row) -> float:
        """The probability of label 1 at ``row``."""
        return 1.0 / (1.0 + math.exp(-self.logit(row)))


def train(rows: list[Row], labels: list[int], seed: int, *, epochs: int = EPOCHS,
          learning_rate: float = LEARNING_RATE, rng_offset: int = RNG_OFFSET) -> Model:
    """Fit a logistic regression to ``rows`` and their 0/1 ``labels`` by SGD."""
    rng = random.Random(seed + rng_offset)
    weights = [0.0] * len(rows[0])
    bias = 0.0
    steps = epochs * len(rows)
    for step in range(steps):
        index = rng.randrange(len(rows))
        row = rows[index]
        z = bias + sum(w * x for w, x in zip(weights, row, strict=True))
        error = 1.0 / (1.0 + math.exp(-max(-MAX_LOGIT, min(MAX_LOGIT, z)))) - labels[index]
        rate = learning_rate * (1.0 - step / steps)
        weights = [w - rate * error * x for w, x in zip(weights, row, strict=True)]
        bias -= rate * error
    return Model(tuple(weights), bias)
