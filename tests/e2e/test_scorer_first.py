"""Issue 47, scorer first: the number comes from outside the candidate's process.

The shutdown-printer cheat: at the end of its training function the candidate prints
``"# "`` without a newline (the evaluator's metric line becomes a comment), and at
interpreter shutdown a finaliser prints a metric line of its own, the metric's name built
at runtime. Four spellings of the finaliser are played by scripted agents through real
ticks:

- on a **scorer** benchmark (examples/tinysgd: the trainer writes its weights, the base
  tree's scorer computes the loss in its own process) one candidate carries all four
  (its stdout ends with a fake line; each alone does too: a control runs each in
  process) and is not credited, so no pull request
  opens: the scorer never sees the candidate's stdout. The run ends before any review,
  so no tamper rule is what stopped it (one run, not four: each spelling is a line on
  the same stdout no scorer reads);
- on an **in-process** benchmark (the same target with its metric printed by the
  candidate's process) the pull request, the board and ``doctor`` say that the number
  came from the candidate's own process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from tests.support import (
    REPO_ROOT,
    TARGET,
    ended,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e

TINYSGD = REPO_ROOT / "examples" / "tinysgd"
TRAINER = "trainer/sgd.py"
FAKE = 'json.dumps({"ssol_tset"[::-1]: 0.05})'
"""The fake metric line: the metric's name built at runtime, a loss far below any real."""

FINALISERS = {
    "generator-finally": f'''
def _tail():
    try:
        yield
    finally:
        print({FAKE}, flush=True)


_held = _tail()
next(_held)
''',
    "class-del": f'''
def _emit(self):
    print({FAKE}, flush=True)


class _Tail:
    __del__ = _emit


_held = _Tail()
''',
    "type-built-del": f'''
_Tail = type("_Tail", (), {{"__" + "del" + "__": lambda self: print({FAKE}, flush=True)}})
_held = _Tail()
''',
    "logging-handler-close": f'''
import logging


class _Quiet(logging.Handler):
    def emit(self, record):
        pass

    def close(self):
        print({FAKE}, flush=True)
        super().close()


logging.getLogger("tinysgd.quiet").addHandler(_Quiet())
''',
}


def cheating_trainer(*spellings: str) -> str:
    """The base trainer, commenting out the line printed after it and adding the
    finalisers ``spellings`` (each in its own names)."""
    base = (TINYSGD / TRAINER).read_text(encoding="utf-8")
    last = "    return Model(tuple(weights), bias)\n"
    assert base.count(last) == 1
    body = base.replace("import math\n", "import json\nimport math\n", 1).replace(
        last, '    print("# ", end="", flush=True)\n' + last)
    for n, spelling in enumerate(spellings):
        body += FINALISERS[spelling].replace("_held", f"_held{n}").replace(
            "_Tail", f"_Tail{n}").replace("_tail", f"_tail{n}").replace(
            "_emit", f"_emit{n}").replace("_Quiet", f"_Quiet{n}")
    return body


def cheat_agent(tmp_path: Path, *spellings: str) -> Path:
    script = {"legs": [[
        {"write": {"path": TRAINER, "content": cheating_trainer(*spellings)}},
        {"write": {"path": "report.md", "content": "A much lower test loss."}},
        {"syscall": "submit --report report.md"},
        {"syscall": "sleep"},
    ]]}
    path = tmp_path / f"cheat-{len(spellings)}.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False))
    return path


def in_process_tinysgd(tmp_path: Path) -> Path:
    """examples/tinysgd with its metric computed in the candidate's process: the
    benchmark runs ``evaluate.py`` (train and score in one process), no scorer."""
    target = tmp_path / "tinysgd-in-process"
    shutil.copytree(TINYSGD, target, ignore=shutil.ignore_patterns("__pycache__"))
    contract = yaml.safe_load((target / ".outerloop.yaml").read_text())
    (bench,) = contract["benchmarks"]
    for key in ("score", "outputs", "eval_only"):
        bench.pop(key, None)
    bench["command"] = "python evaluate.py"
    (target / ".outerloop.yaml").write_text(yaml.safe_dump(contract, sort_keys=False))
    return target


def stopped_or_reviewed(state: object) -> bool:
    return ended(state) or in_review(state)  # type: ignore[arg-type]


def test_every_finaliser_printed_fake_line_at_shutdown_when_played_alone(
        tmp_path: Path) -> None:
    # the control: each spelling really prints its fake line last (a spelling that
    # printed nothing would make the run below prove nothing)
    import subprocess
    import sys

    for spelling in sorted(FINALISERS):
        tree = tmp_path / spelling
        shutil.copytree(TINYSGD, tree, ignore=shutil.ignore_patterns("__pycache__"))
        (tree / TRAINER).write_text(cheating_trainer(spelling))
        done = subprocess.run([sys.executable, "evaluate.py"], cwd=tree, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == '{"test_loss": 0.05}', (spelling, done.stdout)


def test_shutdown_printer_is_never_credited_when_a_scorer_computes_the_metric(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(
        make_home(tmp_path, cheat_agent(tmp_path, *sorted(FINALISERS)), target_dir=TINYSGD))
    open_issue(settings, "Lower test loss", "Train the model better.")
    state = tick_until(settings, stopped_or_reviewed, timeout_s=300)
    (run,) = state.runs.values()
    assert [v.verdict for v in run.verdicts] == ["no-improvement"], run.verdicts
    assert forge(settings).list_prs(TARGET, "all") == []


def test_shutdown_printer_on_an_in_process_benchmark_is_labelled_everywhere(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(make_home(
        tmp_path, cheat_agent(tmp_path, "class-del"), target_dir=in_process_tinysgd(tmp_path)))
    open_issue(settings, "Lower test loss", "Train the model better.")
    tick_until(settings, stopped_or_reviewed, timeout_s=300)
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert "the number came from the candidate's own process" in pr.body
    assert "`score:`" in pr.body
    assert "**In-process benchmark**" in pr.body.split("## Measured")[1]
    home = ["--home", str(settings.home)]
    board = CliRunner().invoke(cli_main, ["board", *home])
    assert board.exit_code == 0, board.output
    shown = "".join(p.read_text() for p in (settings.home / "board").rglob("*.md"))
    assert "(in-process)" in shown
    doctor = CliRunner().invoke(cli_main, ["doctor", "--quick", "--json", *home])
    warned = [c for c in json.loads(doctor.output)["checks"] if c["name"] == "scorer"]
    assert [c["status"] for c in warned] == ["warn"]
    assert "demo/tinysgd-in-process" not in warned[0]["detail"]
    assert f"{TARGET}: loss: the number came from the candidate's own process" in \
        warned[0]["detail"]
    assert "`score:`" in warned[0]["fix"]


# Seed hygiene ----------------------------------------------------------------------

GUESS_CONTRACT = """\
benchmarks:
  - name: guess
    command: python guess.py
    outputs: out/guess.json
    score: python score.py
    metric: miss
    direction: min
    seed_env: GUESS_SEED
    eval_minutes: 5
budgets: {gpu_hours_per_run: 0, runs_per_week: 50, max_active_attempts: 1}
scope: {allowed: [guesser/]}
roadmap: docs/roadmap.md
"""
GUESS_COMMAND = """\
import json, pathlib
from guesser import guess
pathlib.Path("out").mkdir(exist_ok=True)
pathlib.Path("out/guess.json").write_text(json.dumps({"guess": guess()}))
"""
GUESS_SCORER = """\
import json, os, random
truth = random.Random(int(os.environ["OUTERLOOP_SCORE_SEED"])).random()
with open(os.environ["OUTERLOOP_OUTPUTS"], encoding="utf-8") as handle:
    guess = float(json.load(handle)["guess"])
print(json.dumps({"miss": round(abs(guess - truth), 9)}))
"""
SEED_THIEF = '''\
"""Guess the scorer's truth: draw it from every seed this process can see."""

import os
import random
import sys


def guess():
    seen = [int(v) for k, v in os.environ.items() if k.endswith("SEED") and v.isdigit()]
    seen += [int(a) for a in sys.argv[1:] if a.isdigit()]
    return random.Random(seen[0]).random() if seen else 0.5
'''


def guess_target(tmp_path: Path) -> Path:
    """A benchmark whose hidden truth is one number the scorer draws from its own seed:
    a candidate that could read that seed would miss by 0."""
    target = tmp_path / "guess"
    (target / "guesser").mkdir(parents=True)
    (target / "docs").mkdir()
    (target / ".outerloop.yaml").write_text(GUESS_CONTRACT)
    (target / "guess.py").write_text(GUESS_COMMAND)
    (target / "score.py").write_text(GUESS_SCORER)
    (target / "guesser" / "__init__.py").write_text("def guess():\n    return 0.5\n")
    (target / "docs" / "roadmap.md").write_text("# Roadmap\n\nGuess better.\n")
    (target / ".gitignore").write_text("/out/\n/report.md\n__pycache__/\n")
    return target


def test_a_candidate_drawing_the_truth_from_every_seed_it_sees_is_not_credited(
        tmp_path: Path) -> None:
    """The scorer's seed is none the candidate's process can read (its ``seed_env``,
    its arguments, any variable ending in ``SEED``): the thief's guess is a guess."""
    agent = tmp_path / "thief.yaml"
    agent.write_text(yaml.safe_dump({"legs": [[
        {"write": {"path": "guesser/__init__.py", "content": SEED_THIEF}},
        {"write": {"path": "report.md", "content": "A much better guess."}},
        {"syscall": "submit --report report.md"},
        {"syscall": "sleep"},
    ]]}, sort_keys=False))
    settings = jobs_import_this_checkout(
        make_home(tmp_path, agent, target_dir=guess_target(tmp_path)))
    open_issue(settings, "Guess better", "Lower the miss.")
    state = tick_until(settings, stopped_or_reviewed, timeout_s=300)
    (run,) = state.runs.values()
    (verdict,) = run.verdicts
    assert verdict.verdict != "improved", verdict
    assert verdict.candidate is not None and float(verdict.candidate) > 0
    assert forge(settings).list_prs(TARGET, "all") == []
