"""The tinysgd trainer: ``train(rows, labels, seed) -> Model``, then ``Model.predict``."""

from trainer.sgd import Model, train

__all__ = ["Model", "train"]
