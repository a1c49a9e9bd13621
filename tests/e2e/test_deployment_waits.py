"""A run the deployment stops costs the operator, not the maintainer (issue 23).

A failing ``[compute] setup`` line, an eval placement no node can hold: the run's job
dies of the operator's deployment, not of the run. Through real ticks on local compute
(no mocks): the run waits with one line quoting the job's own words (in ``status``,
the tick's notes), its issue is told once and never released or claimed again, no
comment is posted per tick, and once the operator fixes the settings the next tick
tries again and the run goes on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import State
from tests.support import TARGET, forge, in_review, make_home, open_issue, state_of, tick_until

pytestmark = pytest.mark.e2e

BROKEN_LINE = "module load cuda/12.4"


def _set_compute(settings: Settings, lines: str) -> Settings:
    """``lines`` at the top of ``[compute]`` in the home's outerloop.toml."""
    config = settings.home / "outerloop.toml"
    text = config.read_text()
    head, tail = text.split("[compute]\n", 1)
    tail = "\n".join(line for line in tail.split("\n")
                     if not line.startswith(("setup =", "local_gpus =")))
    config.write_text(f"{head}[compute]\n{lines}\n{tail}")
    return load_settings(settings.home)


def _kernel_posts(settings: Settings, number: int) -> list[str]:
    return [c.body for c in forge(settings).list_comments(TARGET, number)
            if c.author == settings.forge.login]


def _waiting(state: State) -> bool:
    return any(state.machine_wait(r) is not None for r in state.runs.values())


def _status(settings: Settings) -> str:
    done = subprocess.run([sys.executable, "-m", "outerloop", "status", "--home",
                           str(settings.home)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_failing_setup_line_waits_for_the_fix_without_spending_a_claim(
        tmp_path: Path) -> None:
    settings = _set_compute(make_home(tmp_path), f'setup = ["{BROKEN_LINE}"]')
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, _waiting, timeout_s=120)
    (run,) = state.runs.values()
    wait = state.machine_wait(run)
    assert wait is not None and wait.origin == "deployment"
    quoted = f"[compute] setup line 1 failed: {BROKEN_LINE}"
    assert quoted in wait.message and f"runs/{run.run_id}/jobs/" in wait.message
    notes = []
    for _ in range(5):  # ticks while the setting stays broken: nothing new happens
        notes += run_tick(settings).notes
    state = state_of(settings)
    assert list(state.runs) == [run.run_id] and not state.runs[run.run_id].ended
    assert sorted(j.purpose for j in state.jobs.values()) == ["climb"]  # backoff holds
    assert any(quoted in note for note in notes), notes
    assert quoted in _status(settings)
    posts = _kernel_posts(settings, number)
    assert len(posts) == 2, posts  # the claim and one word that the start is delayed
    assert "delayed" in posts[1] and BROKEN_LINE not in posts[1]
    assert not [p for p in posts if "outerloop:release" in p]

    fixed = _set_compute(settings, 'setup = ["true"]')  # the operator's fix
    state = tick_until(fixed, in_review, timeout_s=180)
    (after,) = state.runs.values()
    assert after.run_id == run.run_id and after.pr_number is not None
    assert sorted(j.purpose for j in state.jobs.values() if j.purpose in
                  ("climb", "retry", "recover")) == ["climb", "retry"]
    assert len(_kernel_posts(fixed, number)) == 2  # still no further word on the issue


def _submitting_agent(tmp_path: Path) -> Path:
    """The 2-opt change submitted at once (no launch: only the eval asks for GPUs)."""
    import yaml

    from tests.support import AGENTS

    legs = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())["legs"]
    write = next(step for step in legs[0] if "write" in step)
    path = tmp_path / "submit-2opt.yaml"
    path.write_text(yaml.safe_dump({"legs": [[
        write, {"write": {"path": "report.md", "content": "# 2-opt\n\nShorter tours.\n"}},
        {"syscall": "submit --report report.md"}, {"syscall": "sleep"}]]}))
    return path


def test_eval_placement_no_node_can_hold_waits_instead_of_aborting(tmp_path: Path) -> None:
    """The benchmark asks for 2 GPUs per eval where the compute has 1: the scheduler
    refuses the eval job at submit; the run waits, quoting the scheduler's words, and
    goes on once the operator gives the compute enough GPUs."""
    from tests.support import EXAMPLE_TARGET

    target = tmp_path / "tinytsp"
    subprocess.run(["cp", "-r", str(EXAMPLE_TARGET), str(target)], check=True)
    contract = target / ".outerloop.yaml"
    text = contract.read_text().replace("gpu_hours_per_run: 0", "gpu_hours_per_run: 4")
    contract.write_text(text.replace("    eval_minutes: 5\n", "    eval_minutes: 5\n"
                                     "    gpus: 2\n", 1))
    settings = _set_compute(make_home(tmp_path, _submitting_agent(tmp_path),
                                      target_dir=target), "local_gpus = 1")
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, _waiting, timeout_s=180)
    (run,) = state.runs.values()
    wait = state.machine_wait(run)
    assert wait is not None and wait.origin == "deployment" and not run.ended
    assert "refuses eval job" in wait.message and "2 GPU(s)" in wait.message, wait.message
    for _ in range(3):
        run_tick(settings)
    assert not state_of(settings).runs[run.run_id].ended
    fixed = _set_compute(settings, "local_gpus = 2")
    state = tick_until(fixed, in_review, timeout_s=180)
    assert state.runs[run.run_id].pr_number is not None
    posts = _kernel_posts(fixed, number)
    assert not [p for p in posts if "outerloop:release" in p]
