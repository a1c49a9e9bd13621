"""tinyclf's trusted scorer: the accuracy of a predictions file against the held-out labels.

Usage: ``OUTERLOOP_OUTPUTS=<predictions.csv> python score.py``. outerloop runs it from the
root of a fresh checkout of the *base* tree, in its own sandboxed process, after the
benchmark command wrote ``out/predictions.csv`` and outerloop copied it out. It reads the
labels from ``data/test_labels.csv`` (eval-only: no agent-side process ever sees it) and
prints one JSON line, ``{"accuracy": ..., "scored": ...}``.

The predictions are the candidate's output, so they are read as data only: CSV text,
bounded in size, never imported, executed or unpickled. A missing, unreadable or
malformed row counts as a wrong answer; a repeated id counts once (its first row).
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path

LABELS = Path("data") / "test_labels.csv"
MAX_PREDICTIONS_BYTES = 1024 * 1024
MAX_FIELD_CHARS = 64


def read_labels(path: Path) -> dict[str, str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["id"]: row["label"] for row in csv.DictReader(handle)}


def read_predictions(path: Path) -> dict[str, str]:
    """``id -> label`` from the candidate's file; nothing for anything not plain CSV."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PREDICTIONS_BYTES + 1)
    except OSError:
        return {}
    if len(data) > MAX_PREDICTIONS_BYTES:
        return {}
    text = data.decode("utf-8", "replace")
    out: dict[str, str] = {}
    try:
        for row in csv.reader(io.StringIO(text)):
            if len(row) == 2 and max(map(len, row)) <= MAX_FIELD_CHARS:
                out.setdefault(row[0].strip(), row[1].strip())
    except csv.Error:
        return out
    return out


def main() -> int:
    outputs = os.environ.get("OUTERLOOP_OUTPUTS")
    if not outputs:
        print("score.py: OUTERLOOP_OUTPUTS is not set", file=sys.stderr)
        return 2
    labels = read_labels(LABELS)
    predicted = read_predictions(Path(outputs))
    right = sum(1 for key, label in labels.items() if predicted.get(key) == label)
    print(json.dumps({"accuracy": round(right / len(labels), 6), "scored": len(labels)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
