"""The noisy example target, examples/tinysgd, and its two scripted agents.

bench/gate_trials.py and the end-to-end tests rely on these facts: the contract
validates with the trainer in scope, the last stdout line is the JSON result and moves
with the seed, an edit of the trainer's constants measures what ``evaluate(seed,
**variant)`` returns in process, the fishing agent re-seeds the trainer once per leg and
the gain agent changes only ``EPOCHS``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from outerloop.contract import load_contract_file
from outerloop.contract_scope import path_violation
from outerloop.harness.scripted import load_script

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "examples" / "tinysgd"
AGENTS = ROOT / "examples" / "agents"
TRAINER = "trainer/sgd.py"


def _copy(dest: Path) -> Path:
    tree = dest / "tinysgd"
    shutil.copytree(TARGET, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tree


def _run(tree: Path, seed: int) -> list[str]:
    done = subprocess.run([sys.executable, "evaluate.py"], cwd=tree, capture_output=True,
                          text=True, timeout=60, check=True,
                          env={**os.environ, "TINYSGD_SEED": str(seed),
                               "PYTHONDONTWRITEBYTECODE": "1"})
    return done.stdout.splitlines()


def _loss(tree: Path, seed: int) -> float:
    return float(json.loads(_run(tree, seed)[-1])["test_loss"])


def _in_process(tree: Path, seed: int, **variant: int) -> float:
    code = ("import json, sys; from evaluate import evaluate; "
            "print(evaluate(int(sys.argv[1]), **json.loads(sys.argv[2])))")
    done = subprocess.run([sys.executable, "-c", code, str(seed), json.dumps(variant)],
                          cwd=tree, capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return float(done.stdout)


def test_contract_validates_with_the_trainer_in_scope() -> None:
    contract = load_contract_file(TARGET / ".outerloop.yaml")
    (bench,) = contract.benchmarks
    assert (bench.name, bench.metric, bench.direction, bench.seed_env) == (
        "loss", "test_loss", "min", "TINYSGD_SEED")
    assert contract.scope.allowed == ["trainer/"]
    assert path_violation(contract, TRAINER) is None
    assert path_violation(contract, "evaluate.py") == "outside scope.allowed"
    assert (TARGET / contract.roadmap).is_file()


def test_last_stdout_line_is_the_json_result_and_moves_with_the_seed(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    lines = _run(tree, 5)
    assert len(lines) == 2 and not lines[0].startswith("{")
    assert list(json.loads(lines[-1])) == ["test_loss"]
    assert _loss(tree, 5) == _loss(tree, 5) != _loss(tree, 6)


def test_the_gain_agent_changes_only_epochs_and_measures_as_the_variant(tmp_path: Path) -> None:
    (write,) = [s.write for s in load_script(AGENTS / "tinysgd-gain.yaml").legs[0]
                if s.write is not None and s.write.path == TRAINER]
    base = (TARGET / TRAINER).read_text(encoding="utf-8")
    assert write.content == base.replace("EPOCHS = 3\n", "EPOCHS = 23\n") != base
    tree = _copy(tmp_path)
    (tree / TRAINER).write_text(write.content, encoding="utf-8")
    assert _loss(tree, 9) == _in_process(TARGET, 9, epochs=23) != _loss(TARGET, 9)


def test_the_fishing_agent_reseeds_the_trainer_once_per_leg(tmp_path: Path) -> None:
    script = load_script(AGENTS / "tinysgd-null.yaml")
    tree = _copy(tmp_path)
    for offset, leg in enumerate(script.legs[:8], start=1):
        (shell,) = [s.shell for s in leg if s.shell is not None]
        subprocess.run(["bash", "-c", shell], cwd=tree, check=True)
        assert f"\nRNG_OFFSET = {offset}\n" in (tree / TRAINER).read_text(encoding="utf-8")
        assert [s.syscall for s in leg if s.syscall] == ["submit --report report.md", "sleep"]
    assert _loss(tree, 4) == _in_process(TARGET, 4, rng_offset=8) != _loss(TARGET, 4)
    assert [s.syscall for s in script.legs[8] if s.syscall] == ["stop --report report.md"]
    assert all(leg[0].expect == "no-improvement" for leg in script.legs[1:])
