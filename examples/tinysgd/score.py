"""tinysgd's trusted scorer: the test loss of the weights the command wrote.

Usage: ``OUTERLOOP_OUTPUTS=<model.json> OUTERLOOP_SCORE_SEED=<n> python score.py``.
outerloop runs it from the root of a fresh checkout of the *base* tree, in its own
sandboxed process, after the benchmark command wrote ``out/model.json`` and outerloop
copied it out. It draws ``TEST_POINTS`` fresh test points from the world
(``data/world.json``, eval-only) under ``OUTERLOOP_SCORE_SEED`` (a seed only the scorer
gets: no candidate process ever sees it, nor the world) and prints one JSON line,
``{"test_loss": ...}``, the mean log loss (lower is better).

The model file is the candidate's output, so it is read as data only: bounded JSON
holding five finite weights and a finite bias, never imported or executed. Anything
else is an error (exit 1, no metric): the gate counts it as a failed evaluation.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from pathlib import Path

from world import draw, load_world

METRIC = "test_loss"
SCORE_SEED_ENV = "OUTERLOOP_SCORE_SEED"
OUTPUTS_ENV = "OUTERLOOP_OUTPUTS"
TEST_POINTS = 320
MAX_MODEL_BYTES = 64 * 1024
MAX_LOGIT = 30.0

Row = tuple[float, ...]


class BadModel(ValueError):
    """The model file is not five finite weights and a finite bias."""


def read_model(path: Path, features: int) -> tuple[tuple[float, ...], float]:
    """(weights, bias) from the candidate's file, or ``BadModel`` saying what is wrong."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_MODEL_BYTES + 1)
    except OSError as exc:
        raise BadModel(f"cannot read {path.name}: {exc.strerror}") from None
    if len(data) > MAX_MODEL_BYTES:
        raise BadModel(f"{path.name} is larger than {MAX_MODEL_BYTES} bytes")
    try:
        model = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadModel(f"{path.name} is not JSON") from None
    if not isinstance(model, dict):
        raise BadModel(f"{path.name} is not a JSON object")
    weights, bias = model.get("weights"), model.get("bias")
    numbers = weights + [bias] if isinstance(weights, list) else []
    if len(numbers) != features + 1 or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            for x in numbers):
        raise BadModel(f"{path.name} must hold {features} finite weights and a finite bias")
    return tuple(float(x) for x in numbers[:-1]), float(numbers[-1])


def log_loss(weights: tuple[float, ...], bias: float, rows: list[Row],
             labels: list[int]) -> float:
    """The mean negative log likelihood of ``labels`` (logits clipped to +-MAX_LOGIT)."""
    total = 0.0
    for row, label in zip(rows, labels, strict=True):
        z = bias + sum(w * x for w, x in zip(weights, row, strict=True))
        z = max(-MAX_LOGIT, min(MAX_LOGIT, z))
        total += math.log1p(math.exp(-z if label else z))
    return total / len(rows)


def test_loss(weights: tuple[float, ...], bias: float, score_seed: int,
              world: Path | None = None) -> float:
    """The loss on the test points ``score_seed`` draws, rounded to 6 decimals."""
    true_weights, scales = load_world() if world is None else load_world(world)
    rows, labels = draw(random.Random(f"test:{score_seed}"), TEST_POINTS, true_weights,
                        scales)
    return round(log_loss(weights, bias, rows, labels), 6)


def read_int(name: str) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw)
    except ValueError:
        print(f"score.py: {name}={raw!r} is not an integer (outerloop sets it for the "
              f"scorer)", file=sys.stderr)
        raise SystemExit(2) from None


def main() -> int:
    outputs = os.environ.get(OUTPUTS_ENV)
    if not outputs:
        print(f"score.py: {OUTPUTS_ENV} is not set", file=sys.stderr)
        return 2
    seed = read_int(SCORE_SEED_ENV)
    true_weights, _ = load_world()
    try:
        weights, bias = read_model(Path(outputs), len(true_weights))
    except BadModel as exc:
        print(f"score.py: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({METRIC: test_loss(weights, bias, seed)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
