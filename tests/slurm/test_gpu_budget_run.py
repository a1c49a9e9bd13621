"""A GPU benchmark run through real ticks on the real local Slurm: its evals get the
benchmark's GPU, their GPU-hours are charged to the run, and once the run is past its
``gpu_hours_per_run`` the agent's next launch is refused and the agent is told."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import EXAMPLE_TARGET, ended, make_home, open_issue, tick_until

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

pytestmark = pytest.mark.e2e  # a whole run: the slurm-runs group

EVAL_SLEEP_S = 2
BUDGET_H = 0.005
"""18 GPU-seconds: less than the first look's 6 pair jobs (3 couples), 12 sides x 2 s on
one GPU each."""

CONTRACT = f"""\
benchmarks:
  - name: tour
    command: >-
      sleep {EVAL_SLEEP_S} && echo "eval devices=$CUDA_VISIBLE_DEVICES" >&2
      && python evaluate.py --bench tour --json
    metric: mean_tour_length
    direction: min
    seed_env: TINYTSP_SEED
    eval_minutes: 3
    gpus: 1
budgets:
  gpu_hours_per_run: {BUDGET_H}
  runs_per_week: 50
  max_active_attempts: 1
  max_concurrent_gpus: 2
scope:
  allowed: [solver/]
roadmap: docs/roadmap.md
"""

SCRIPT = """\
legs:
  - - shell: "printf '\\\\n# closed tours\\\\n' >> solver/tour.py"
    - write: {path: report.md, content: "A comment only."}
    - syscall: "submit --report report.md"
    - syscall: sleep
  - - expect: "no-improvement"
    - syscall: 'launch --name more --minutes 1 --gpus 1 -- nvidia-smi'
    - syscall: sleep
  - - expect: "GPU-hours"
    - syscall: "stop --report report.md"
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_gpu_run_past_its_budget_gets_no_further_launch_and_the_agent_is_told(
        tmp_path: Path) -> None:
    target = tmp_path / "gputsp"
    shutil.copytree(EXAMPLE_TARGET, target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / ".outerloop.yaml").write_text(CONTRACT)
    script = tmp_path / "agent.yaml"
    script.write_text(SCRIPT)
    settings = make_home(tmp_path, script, compute="slurm", target_dir=target)
    open_issue(settings, "Try tour", "Please look at tour.")
    state = tick_until(settings, ended, timeout_s=480, pause_s=2.0)
    (run,) = state.runs.values()
    assert run.ending == "negative-result"
    assert run.launches == []
    assert not [j for j in state.jobs.values() if j.purpose == "launch"]
    evals = [j for j in state.jobs.values() if j.purpose == "eval"]
    # the first look's 3 couples of 2 pair jobs, each both sides in turn on one GPU;
    # equal numbers (a comment) stop the test there
    assert len(evals) == 6 and {j.gpus for j in evals} == {1}
    assert run.gpu_seconds >= 12 * EVAL_SLEEP_S > BUDGET_H * 3600
    assert run.gpu_seconds == sum(j.gpu_seconds for j in evals)
    legs = settings.home / "runs" / run.run_id / "kernel" / "legs"
    prompts = sorted(p.read_text() for p in legs.glob("*-prompt.md")) if legs.is_dir() else []
    if not prompts:
        prompts = [p.read_text() for p in (settings.home / "runs" / run.run_id)
                   .rglob("*-prompt.md")]
    told = [p for p in prompts if "Refused: these launches could use up to" in p]
    assert told, "the agent was never told its launch was refused for GPU-hours"
    assert "0.00 left" in told[0]
    stderr = "".join(p.read_text() for p in (settings.home / "runs" / run.run_id / "jobs"
                                             / evals[0].name).rglob("stderr"))
    assert "eval devices=0" in stderr or "eval devices=1" in stderr
