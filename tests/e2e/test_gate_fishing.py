"""Issue 21 through real ticks on a noisy target (examples/tinysgd: SGD training whose
result follows the trainer's random stream): an agent fishing with RNG-shift nulls is
never credited however often it resubmits, because every submission spends part of one
false-credit budget per run; a real gain is credited with a PR that shows its evidence.
bench/gate_ticks.py runs the same with 20 fishing runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.config import Settings
from outerloop.ledger.state import RunRecord
from outerloop.numfmt import format_number, verdict_digits
from tests.support import (
    AGENTS,
    REPO_ROOT,
    TARGET,
    ended,
    forge,
    in_review,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e

TINYSGD = REPO_ROOT / "examples" / "tinysgd"
NULL_SUBMISSIONS = 4
"""Of examples/agents/tinysgd-null.yaml's eight (its first four legs, then its last,
which stops): enough to show every submission spending part of one run's budget, and
half the real ticks (bench/gate_ticks.py plays all eight, over 20 runs)."""


def tinysgd_target(tmp_path: Path, confidence: float | None = None) -> Path:
    """A copy of examples/tinysgd, its contract's confidence set when given."""
    target = tmp_path / "tinysgd"
    shutil.copytree(TINYSGD, target, ignore=shutil.ignore_patterns("__pycache__"))
    if confidence is not None:
        contract = target / ".outerloop.yaml"
        text = contract.read_text()
        contract.write_text(text.replace("    eval_minutes: 5\n",
                                         f"    eval_minutes: 5\n    confidence: {confidence}\n"))
    return target


def gain_agent(tmp_path: Path, epochs: int) -> Path:
    """examples/agents/tinysgd-gain.yaml with ``EPOCHS = epochs``."""
    script = yaml.safe_load((AGENTS / "tinysgd-gain.yaml").read_text())
    (write,) = [step["write"] for step in script["legs"][0] if "write" in step
                and step["write"]["path"].startswith("trainer/")]
    assert "EPOCHS = 23" in write["content"]
    write["content"] = write["content"].replace("EPOCHS = 23", f"EPOCHS = {epochs}")
    path = tmp_path / "gain.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def fishing_agent(tmp_path: Path, submissions: int) -> Path:
    """examples/agents/tinysgd-null.yaml with its first ``submissions`` legs and its
    last (which stops after the last verdict)."""
    script = yaml.safe_load((AGENTS / "tinysgd-null.yaml").read_text())
    legs = script["legs"]
    assert len(legs) == 9 and any("stop" in str(step) for step in legs[-1])
    script["legs"] = [*legs[:submissions], legs[-1]]
    path = tmp_path / "fishing.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def spent(run: RunRecord) -> float:
    """What the run's looks spent of its false-credit budget, all submissions together."""
    return sum(seen.alpha for looks in run.looks.values() for seen in looks)


def status_gate(settings: Settings) -> dict[str, object]:
    shown = CliRunner().invoke(cli_main, ["status", "--json", "--home", str(settings.home)])
    assert shown.exit_code == 0, shown.output
    gate: dict[str, object] = json.loads(shown.output)["runs"][0]["gate"]
    return gate


def test_an_agent_fishing_with_rng_shifts_is_never_credited_however_often_it_resubmits(
        tmp_path: Path) -> None:
    # confidence 0.999: the bound this run may be credited by luck is 0.1% (the default
    # 0.99 is measured over 20 runs by bench/gate_ticks.py)
    settings = make_home(tmp_path, fishing_agent(tmp_path, NULL_SUBMISSIONS),
                         target_dir=tinysgd_target(tmp_path, confidence=0.999))
    open_issue(settings, "Lower test loss", "Try a better random stream for the trainer.")
    state = tick_until(settings, ended, timeout_s=900)
    (run,) = state.runs.values()
    assert [v.verdict for v in run.verdicts] == ["no-improvement"] * NULL_SUBMISSIONS
    assert run.ending == "negative-result"
    assert forge(settings).list_prs(TARGET, "all") == []
    assert len(set(run.trees.values())) == NULL_SUBMISSIONS  # as many different trees
    assert 0 < spent(run) <= 0.001  # every submission, one run's budget
    decided = [v.alpha for v in run.verdicts]
    assert decided[0] > decided[-1]  # later submissions spend less
    gate = status_gate(settings)
    assert gate["credited"] is False and gate["confidence"] == 0.999
    submissions = gate["submissions"]
    assert isinstance(submissions, list) and len(submissions) == NULL_SUBMISSIONS
    legs = sorted((settings.home / "runs" / run.run_id / "legs").glob("*-prompt.md"))
    assert f"this run's submissions so far: {NULL_SUBMISSIONS}" in legs[-1].read_text()


def test_a_real_gain_on_a_noisy_target_is_credited_with_its_evidence_on_the_pr(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, gain_agent(tmp_path, epochs=30),
                         target_dir=tinysgd_target(tmp_path))
    open_issue(settings, "Lower test loss", "Train the model better.")
    state = tick_until(settings, in_review, timeout_s=600)
    (run,) = state.runs.values()
    (verdict,) = run.verdicts
    assert verdict.verdict == "improved", verdict.detail
    assert verdict.delta is not None
    pairs = verdict.seeds
    assert 2 * pairs == sum(len(seen.pairs) for seen in run.looks[1]) and pairs >= 3
    (pr,) = forge(settings).list_prs(TARGET, "all")
    measured = pr.body.split("## Measured")[1].split("## Experiments")[0]
    digits = verdict_digits(verdict.baseline, verdict.candidate)
    assert verdict.low is not None and verdict.high is not None and verdict.sd is not None
    for text in [f"- pairs: {pairs} couples, {2 * pairs} pair jobs (each couple under its "
                 "own hidden seed",
                 f"- gain interval: `{format_number(verdict.low, digits)}` to "
                 f"`{format_number(verdict.high, digits)}`",
                 f"- noise measured: `{format_number(verdict.sd, digits)}`",
                 "- false-credit budget: this run may spend alpha `", "(99% confidence)",
                 "- submissions in this run: 1",
                 f"submission 1: improved, gain {format_number(verdict.delta, digits)}"]:
        assert text in measured, text
    assert verdict.low is not None and float(verdict.low) > 0  # the whole interval gains
    gate = status_gate(settings)
    assert gate["credited"] is True
    assert gate["submissions"] == [{
        "submission": 1, "verdict": "improved", "pairs": pairs,
        "baseline": verdict.baseline, "candidate": verdict.candidate, "gain": verdict.delta,
        "low": verdict.low, "high": verdict.high, "noise_sd": verdict.sd,
        "alpha_spent": float(f"{verdict.alpha:.6g}")}]
