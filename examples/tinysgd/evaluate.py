"""tinysgd in one process: train, then score, as a maintainer's check and for benches.

Usage: ``python evaluate.py`` (needs ``data/world.json``, which is eval-only: an agent's
workspace does not have it; an agent tries its trainer with ``python produce.py``).
The seed comes from ``TINYSGD_SEED`` (default 1) and here both seeds the trainer *and*
draws the test points; the last stdout line is the result, one JSON object:
``{"test_loss": 0.662093}``.

This is **not** how outerloop measures the benchmark: the gate runs ``produce.py``
(the candidate's code writes its weights) and then ``score.py`` from the base tree in a
separate process, under a scorer seed no candidate process sees
(``.outerloop.yaml``). Here the candidate's code runs in the process that prints the
metric, and the test points come from the seed it is given, so this path is for
trusted code only. ``evaluate(seed, **variant)`` is the same measurement for callers in
the same process (outerloop's ``bench/gate_trials.py``): ``variant`` passes keyword
arguments to ``trainer.train``, as a changed constant in ``trainer/sgd.py`` would
(``epochs=12`` is ``EPOCHS = 12``).
"""

from __future__ import annotations

import json
from typing import Any

from produce import read_seed, read_train
from score import METRIC, test_loss
from trainer import train

SEED_ENV = "TINYSGD_SEED"


def evaluate(seed: int, score_seed: int | None = None, **variant: Any) -> float:
    """The test loss of the trainer under ``seed`` on the test points ``score_seed``
    draws (``seed`` when None), rounded to 6 decimals (what the CLI prints)."""
    rows, labels = read_train()
    model = train(rows, labels, seed, **variant)
    return test_loss(model.weights, model.bias, seed if score_seed is None else score_seed)


def result_line(value: float) -> str:
    """The JSON line the CLI prints last."""
    return json.dumps({METRIC: value})


def main() -> int:
    seed = read_seed()
    print(f"tinysgd: logistic regression trained and scored in one process, seed {seed}",
          flush=True)
    print(result_line(evaluate(seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
