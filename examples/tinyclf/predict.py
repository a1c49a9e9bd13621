"""tinyclf's benchmark command: fit the model on the training set, predict the test set.

Usage: ``python predict.py``. Reads ``data/train.csv`` (``x1,x2,label``) and
``data/test_features.csv`` (``id,x1,x2``), writes ``out/predictions.csv`` (``id,label``,
one row per test point) and prints a one-line summary. It never reads the test labels:
``data/test_labels.csv`` is eval-only, and only ``score.py`` (the trusted scorer, run
from the base tree in its own process) reads it.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from model import fit, predict

OUT = Path("out") / "predictions.csv"


def read_rows(path: Path, label: str | None) -> tuple[list[str], list[tuple[float, ...]],
                                                       list[str]]:
    """(ids, feature rows, labels) of a CSV; ``label`` names the label column, if any."""
    ids, rows, labels = [], [], []
    with path.open(newline="", encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            ids.append(record.get("id", str(len(ids))))
            rows.append(tuple(float(record[k]) for k in record if k.startswith("x")))
            if label is not None:
                labels.append(record[label])
    return ids, rows, labels


def main() -> int:
    _, train_rows, train_labels = read_rows(Path("data") / "train.csv", "label")
    test_ids, test_rows, _ = read_rows(Path("data") / "test_features.csv", None)
    model = fit(train_rows, train_labels)
    predicted = predict(model, test_rows)
    OUT.parent.mkdir(exist_ok=True)
    with OUT.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "label"])
        writer.writerows(zip(test_ids, predicted))
    print(f"wrote {len(predicted)} predictions to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
