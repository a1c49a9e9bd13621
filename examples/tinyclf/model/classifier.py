"""Nearest centroid: each class is the mean of its training points; a point gets the
label of the closest mean (ties: the first label in sorted order)."""

from __future__ import annotations

import math

Row = tuple[float, ...]


def fit(rows: list[Row], labels: list[str]) -> dict[str, Row]:
    """One centroid per label."""
    sums: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for row, label in zip(rows, labels):
        acc = sums.setdefault(label, [0.0] * len(row))
        for i, value in enumerate(row):
            acc[i] += value
        counts[label] = counts.get(label, 0) + 1
    return {label: tuple(v / counts[label] for v in acc) for label, acc in sums.items()}


def predict(model: dict[str, Row], rows: list[Row]) -> list[str]:
    """The label of the nearest centroid for each row."""
    labels = sorted(model)
    return [min(labels, key=lambda label: math.dist(model[label], row)) for row in rows]
