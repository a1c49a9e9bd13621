"""The classifier agents improve: ``fit(rows, labels)`` then ``predict(model, rows)``."""

from model.classifier import fit, predict

__all__ = ["fit", "predict"]
