"""A target written for the reference outerloop works unchanged (issue 11).

Its eval prints ``{"metric": name, "value": v}``, it ships no ``.gitignore`` for the
agent's scratch files, and the agent runs the eval in its workspace with a tool that
leaves a lock file, a virtualenv, bytecode, a compiled object and a cache behind.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.contract_fields import LINES_COUNTED
from outerloop.kernel.tick import run_tick
from outerloop.ledger.book import run_file
from tests.support import (
    EXAMPLE_TARGET,
    TARGET,
    ended,
    eval_sides,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e

AGENT = Path(__file__).parent / "agents" / "reference-shape-uv.yaml"
RESULT_LINE = 'json.dumps({metric: mean, "instances": INSTANCES})'
REFERENCE_LINE = 'json.dumps({"metric": metric, "value": mean})'


def reference_target(tmp_path: Path) -> Path:
    """tinytsp as a reference-format target: the metric/value shape, no .gitignore."""
    target = tmp_path / "reference-tinytsp"
    shutil.copytree(EXAMPLE_TARGET, target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / ".gitignore").unlink()
    scorer = target / "score.py"  # its result line is evaluate.py's too
    text = scorer.read_text()
    assert RESULT_LINE in text
    scorer.write_text(text.replace(RESULT_LINE, REFERENCE_LINE))
    return target


GUIDANCE = "Prefer local search over new constructions; keep solve() pure Python."
REFERENCE_FIELDS = f"""\
benchmarks:
  - name: tour
    command: python evaluate.py --bench tour --json
    metric: mean_tour_length
    direction: min
    seed_env: TINYTSP_SEED
    eval_minutes: 5
    lines: 2
  - name: spread
    command: python evaluate.py --bench spread --json
    metric: mean_spread_length
    direction: min
    seed_env: TINYTSP_SEED
    eval_minutes: 5
    regression: true
budgets:
  gpu_hours_per_run: 0
  runs_per_week: 50
scope:
  allowed: [solver/]
roadmap: docs/roadmap.md
suite: [tour, spread]
guidance: |
  {GUIDANCE}
"""


def test_contract_with_lines_regression_suite_and_guidance_reaches_a_pr_with_its_guard(
        tmp_path: Path) -> None:
    target = reference_target(tmp_path)
    contract = target / ".outerloop.yaml"
    contract.write_text(REFERENCE_FIELDS)
    check = subprocess.run([sys.executable, "-m", "outerloop", "contract", "check",
                            str(contract)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    warnings = [line for line in check.stdout.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: benchmarks[0].lines: " + LINES_COUNTED.format(on="true")]
    assert "a guard: re-measured beside every candidate" in check.stdout
    settings = jobs_import_this_checkout(make_home(tmp_path, AGENT, target_dir=target))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    notes = run_tick(settings).notes
    assert f"{TARGET}: benchmarks[0].lines: an earlier shape of lines" in "\n".join(notes)
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert [v.verdict for v in run.verdicts] == ["improved"] and run.pr_number is not None
    # the guard is measured beside the candidate under the same seeds, though the
    # change touches no scope.shared
    benches = [side.bench for side in eval_sides(settings, state, run.run_id)
               if side.role == "base"]
    # the first look measures the guard (3 couples: 6 pair jobs each); a later look
    # (the hidden seeds may leave the first three couples inconclusive) measures the
    # primary only
    assert benches[:12] == ["tour"] * 6 + ["spread"] * 6
    assert set(benches[12:]) <= {"tour"}
    assert "siblings held: spread (mean_spread_length)" in run.verdicts[-1].detail
    brief = (settings.home / "runs" / run.run_id / "legs" / "001-prompt.md").read_text()
    guidance = brief.split("## Guidance")[1].split("## Ruler")[0]
    assert re.search(r"^`{3,}text\n" + re.escape(GUIDANCE) + r"\n", guidance, flags=re.M)
    assert "Guard benchmarks: `spread`." in brief


def test_pr_carries_only_the_in_scope_source_change_when_the_eval_prints_metric_and_value(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, AGENT, target_dir=reference_target(tmp_path))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert [v.verdict for v in run.verdicts] == ["improved"]
    assert run.pr_number is not None
    diff = forge(settings).diff_pr(TARGET, run.pr_number)
    changed = sorted(set(re.findall(r"^diff --git a/(\S+) b/", diff, flags=re.M)))
    assert changed == ["solver/tour.py"]
    wakes = sorted((settings.home / "runs" / run.run_id / "legs").glob("*-prompt.md"))
    assert len(wakes) == 1  # credited at once: no wake, no refusal
    ledger = run_file(settings.home, TARGET, run.run_id).read_text().splitlines()
    evals = [json.loads(line)["action"]["spec"] for line in ledger if '"purpose":"eval"' in
             line.replace(" ", "") and json.loads(line).get("kind") == "intent"]
    # submit --minutes 3: each side of each pair gets 3 minutes and its scorer (tinytsp
    # is scorer first) as much again, the pair job both in turn plus 2; 2-opt is
    # credited at the first look, 3 couples of 2 pair jobs; the guard's (spread,
    # `regression: true`) pairs beside them once it is measured (the full suite under
    # load saw 12 where a run alone sees 6: which tick measures the guard is timing)
    assert len(evals) in (6, 12) and {spec["time_minutes"] for spec in evals} == {
        (3 + 3) * 2 + 2}


def test_run_ends_for_the_maintainers_when_the_baseline_fails_and_the_agent_is_not_woken(
        tmp_path: Path) -> None:
    target = reference_target(tmp_path)
    tour = target / "solver" / "tour.py"
    tour.write_text(tour.read_text().replace("    return nearest_neighbour(points)",
                                             "    return []"))
    settings = make_home(tmp_path, AGENT, target_dir=target)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, ended)
    (run,) = state.runs.values()
    assert run.ending == "aborted"
    assert [v.verdict for v in run.verdicts] == ["eval-error"]
    assert "failed on the base commit" in (settings.home / "runs" / run.run_id
                                           / "report.md").read_text()
    legs = sorted((settings.home / "runs" / run.run_id / "legs").glob("*-prompt.md"))
    assert len(legs) == 1  # never told to revise
    names = sorted(j.name for j in state.jobs.values() if j.purpose == "eval")
    firsts = [n for n in names if not n.endswith("-r1")]
    assert len(firsts) == 6  # the first look's pairs: 3 couples
    assert names == sorted(firsts + [n + "-r1" for n in firsts])  # each pair's one retry


def test_thread_messages_are_not_posted_when_channels_messages_is_off(tmp_path: Path) -> None:
    target = tmp_path / "quiet-tinytsp"
    shutil.copytree(EXAMPLE_TARGET, target, ignore=shutil.ignore_patterns("__pycache__"))
    contract = target / ".outerloop.yaml"
    contract.write_text(contract.read_text() + "channels: {messages: false, branches: false}\n")
    settings = make_home(tmp_path, target_dir=target)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    ws = settings.home / "runs" / run.run_id / "ws"
    # (the workspace belongs to the sandbox's child user when the kernel is root)
    branches = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(ws), "branch", "-a",
                               "--format=%(refname)"],
                              capture_output=True, text=True, check=True).stdout.split()
    assert [b for b in branches if "outerloop/" in b] == [f"refs/heads/{run.branch}"]
    assert not [b for b in branches if b.startswith("refs/remotes/")]  # nothing to fetch
    local = forge(settings)
    local.comment_as(TARGET, run.pr_number, "Does 2-opt keep the runtime small?", "maintainer")
    tick_until(settings, lambda s: s.runs[run.run_id].legs >= 3
               and s.runs[run.run_id].state == "parked")
    tick_until(settings, lambda s: True)
    assert not [c for c in local.list_comments(TARGET, run.pr_number)
                if c.author == settings.forge.login and "outerloop:reply" in c.body]
    assert any("channels.messages is off" in text for _, _, text in state_of(settings).notes)


def test_new_files_outside_scope_are_named_at_the_next_wake_not_refused(
        tmp_path: Path) -> None:
    script = tmp_path / "lockfile-agent.yaml"
    script.write_text("""
legs:
  - - write: {path: solver/extra.py, content: "X = 1\\n"}
    - shell: "touch uv.lock && mkdir -p .venv && touch .venv/pyvenv.cfg"
    - syscall: 'launch --name try --minutes 5 -- python evaluate.py --bench tour --json'
    - syscall: sleep
  - - expect: "Left out of the sealed candidate"
    - expect: "uv.lock"
    - syscall: stop
""")
    settings = make_home(tmp_path, script)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, ended)
    (run,) = state.runs.values()
    assert len(run.launches) == 1 and run.ending == "negative-result"
    wake = (settings.home / "runs" / run.run_id / "legs" / "002-prompt.md").read_text()
    assert "uv.lock" in wake and ".venv" not in wake and "Refused" not in wake


@pytest.mark.parametrize("siblings", [True, False])
def test_an_agent_sees_its_sibling_runs_only_when_channels_siblings_is_on(
        tmp_path: Path, siblings: bool) -> None:
    target = tmp_path / "wide-tinytsp"
    shutil.copytree(EXAMPLE_TARGET, target, ignore=shutil.ignore_patterns("__pycache__"))
    contract = target / ".outerloop.yaml"
    contract.write_text(contract.read_text().replace("max_active_attempts: 1",
                                                     "max_active_attempts: 2")
                        + f"channels: {{siblings: {'true' if siblings else 'false'}}}\n")
    script = tmp_path / "look.yaml"
    # the first run is still in its leg (sleeping) when the second one's views are written
    script.write_text("legs:\n  - - shell: 'cp .outerloop/siblings.json seen-siblings.json; "
                      "sleep 4'\n    - syscall: stop\n")
    settings = make_home(tmp_path, script, target_dir=target)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace("max_new_runs_per_tick = 1",
                                                 "max_new_runs_per_tick = 2"))
    open_issue(settings, "Shorter tours", "Try 2-opt on tour.")
    open_issue(settings, "Shorter tours too", "Try Or-opt on tour.")
    from outerloop.config import load_settings

    settings = load_settings(settings.home)
    from outerloop.kernel.tick import run_tick

    run_tick(settings)
    run_tick(settings)  # one claim per target per tick: the second run joins the first
    state = tick_until(settings, lambda s: len(s.runs) == 2 and all(
        r.ended for r in s.runs.values()))
    seen = [json.loads((settings.home / "runs" / r.run_id / "ws" / "seen-siblings.json")
                       .read_text()) for r in state.runs.values()]
    assert any(seen) is siblings
