"""The second example target, examples/tinyclf: held-out labels only its scorer reads.

The leak tests and the lead's scorer job rely on these facts: the contract declares the
labels eval-only with a scorer and its outputs, the command writes predictions without
touching the labels (it runs without them), the scorer reads the predictions as data
(malformed rows are wrong answers) and the scripted k-NN change
lifts the accuracy from 0.795 to 0.965, well past the floor.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.contract import load_contract_file
from outerloop.contract_scope import path_violation
from outerloop.harness.scripted import load_script

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "examples" / "tinyclf"
LABELS = "data/test_labels.csv"
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def _copy(dest: Path, *, labels: bool = True) -> Path:
    tree = dest / "tinyclf"
    shutil.copytree(TARGET, tree, ignore=shutil.ignore_patterns("__pycache__", "out"))
    if not labels:
        (tree / LABELS).unlink()
    return tree


def _score(tree: Path, predictions: Path) -> float:
    done = subprocess.run([sys.executable, "score.py"], cwd=tree, capture_output=True,
                          text=True, timeout=60, check=True,
                          env={**ENV, "OUTERLOOP_OUTPUTS": str(predictions)})
    return float(json.loads(done.stdout.splitlines()[-1])["accuracy"])


def _predict(tree: Path) -> Path:
    subprocess.run([sys.executable, "predict.py"], cwd=tree, capture_output=True, text=True,
                   timeout=60, check=True, env=ENV)
    return tree / "out" / "predictions.csv"


def test_contract_holds_the_labels_back_for_the_scorer() -> None:
    contract = load_contract_file(TARGET / ".outerloop.yaml")
    (bench,) = contract.benchmarks
    assert (bench.score, bench.outputs, bench.eval_only) == (
        "python score.py", "out/predictions.csv", [LABELS])
    assert path_violation(contract, LABELS) == f"eval-only data {LABELS} (only the scorer reads it)"
    assert path_violation(contract, "model/classifier.py") is None
    assert path_violation(contract, "score.py") == "outside scope.allowed"


def test_command_predicts_without_the_labels_and_the_base_scores_0_795(tmp_path: Path) -> None:
    predictions = _predict(_copy(tmp_path / "cmd", labels=False))
    assert _score(_copy(tmp_path / "base"), predictions) == pytest.approx(0.795)


def test_knn_script_lifts_accuracy_past_the_floor(tmp_path: Path) -> None:
    tree = _copy(tmp_path, labels=False)
    (step,) = [s for s in load_script(ROOT / "examples/agents/tinyclf-knn.yaml").legs[0]
               if s.write is not None]
    assert step.write is not None and step.write.path == "model/classifier.py"
    (tree / step.write.path).write_text(step.write.content)
    assert _score(_copy(tmp_path / "base"), _predict(tree)) == pytest.approx(0.965)


@pytest.mark.parametrize("text", ["", "not,a,csv,row\n" * 3, "0,a\n" * 5 + "\x00junk",
                                  "id,label\n" + "x" * 2_000_000])
def test_scorer_counts_malformed_predictions_as_wrong(tmp_path: Path, text: str) -> None:
    predictions = tmp_path / "predictions.csv"
    predictions.write_text(text)
    assert _score(_copy(tmp_path), predictions) < 0.5
