"""tinysgd's benchmark command: train the model, write its weights.

Usage: ``python produce.py``. Reads the training set ``data/train.csv`` (80 points,
``x1..x5,label``), trains ``trainer.train`` under the seed ``TINYSGD_SEED`` (default 1;
it seeds the trainer's random stream) and writes the fitted model to
``out/model.json``: ``{"weights": [...], "bias": ...}``. It prints a one-line summary
and no metric: the trusted scorer (``score.py``, run by outerloop from the base tree in
its own process) reads the weights as data and measures them on test points only it
can draw.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

from trainer import train

SEED_ENV = "TINYSGD_SEED"
TRAIN = Path(__file__).resolve().parent / "data" / "train.csv"
OUT = Path("out") / "model.json"

Row = tuple[float, ...]


def read_train(path: Path = TRAIN) -> tuple[list[Row], list[int]]:
    """The training rows and their 0/1 labels."""
    rows, labels = [], []
    with path.open(newline="", encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            rows.append(tuple(float(record[k]) for k in record if k.startswith("x")))
            labels.append(int(record["label"]))
    return rows, labels


def read_seed() -> int:
    raw = os.environ.get(SEED_ENV, "1")
    try:
        return int(raw)
    except ValueError:
        print(f"error: {SEED_ENV}={raw!r} is not an integer", file=sys.stderr)
        raise SystemExit(2) from None


def model_json(weights: tuple[float, ...], bias: float) -> str:
    """What ``out/model.json`` holds (the scorer's input)."""
    return json.dumps({"weights": list(weights), "bias": bias})


def main() -> int:
    seed = read_seed()
    rows, labels = read_train()
    model = train(rows, labels, seed)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(model_json(model.weights, model.bias) + "\n", encoding="utf-8")
    print(f"tinysgd: trained on {len(rows)} points, seed {seed}; wrote {OUT}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
