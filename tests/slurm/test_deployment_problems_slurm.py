"""A job the settings or the machine end is a deployment problem, never a research
outcome (issue 51), through real ticks on the local Slurm, one test per cause.

For each: the run waits with one line in ``status`` (and ``--json``) naming the
setting and the fix, its issue is told once (beside the claim), no research ending is
recorded and the claim is kept (never released), and once the operator fixes the
setting the same run goes on. A full disk (``ENOSPC``) is the sixth cause, covered on
local compute by ``tests/e2e/test_full_disk_eval.py`` and ``test_full_disk_run.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.doctor.waits import check_human_waits
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import RunRecord, State
from tests.parallel import SLURM_GROUP
from tests.support import (
    TARGET,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

pytestmark = [pytest.mark.slurm, pytest.mark.e2e]  # whole runs: the slurm-runs group


def _home(tmp_path: Path, toml: str) -> Settings:
    return jobs_import_this_checkout(make_home(tmp_path, compute="slurm", extra_toml=toml))


def _rewrite(settings: Settings, old: str, new: str) -> Settings:
    """The operator's fix: ``old`` replaced by ``new`` in outerloop.toml."""
    config = settings.home / "outerloop.toml"
    text = config.read_text()
    assert old in text, text
    config.write_text(text.replace(old, new))
    return load_settings(settings.home)


def _waiting(state: State) -> bool:
    return any(state.machine_wait(r) is not None for r in state.runs.values())


def _posts(settings: Settings, number: int) -> list[str]:
    return [c.body for c in forge(settings).list_comments(TARGET, number)
            if c.author == settings.forge.login]


def _status(settings: Settings, *flags: str) -> str:
    done = subprocess.run([sys.executable, "-m", "outerloop", "status", "--home",
                           str(settings.home), *flags], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _start_failed_twice(state: State) -> bool:
    return any(r.start_failures >= 2 for r in state.runs.values())


def _waits_for_the_deployment(settings: Settings, number: int, *words: str,
                              done: Callable[[State], bool] = _waiting) -> RunRecord:
    """The run waits on the deployment (``done``; by default its machine wait, naming
    ``words``): one line naming ``words[0]`` (the setting) and the fix in status and
    status --json; the issue holds the claim and one word; a few more ticks change
    nothing. The waiting run."""
    state = tick_until(settings, done, timeout_s=240, pause_s=1.0)
    (run,) = state.runs.values()
    wait = state.machine_wait(run)
    if done is _waiting:
        assert wait is not None and wait.origin == "deployment", wait
        for word in (*words, "fix:"):
            assert word in wait.message, wait.message
        (check,) = [c for c in check_human_waits(settings)
                    if c.name == "waits for the deployment"]  # doctor says it too
        assert check.status == "fail" and words[0] in check.detail, check
    for _ in range(3):
        run_tick(settings)
    state = state_of(settings)
    run = state.runs[run.run_id]
    assert not run.ended and run.ending is None and list(state.runs) == [run.run_id]
    text = _status(settings)
    assert sum(1 for line in text.splitlines() if words[0] in line) == 1, text
    (shown,) = [r for r in json.loads(_status(settings, "--json"))["runs"]
                if r["run"] == run.run_id]
    for word in (*words, "fix:"):
        assert word in shown["waiting"], shown
    posts = _posts(settings, number)
    assert len(posts) == 2 and "delayed" in posts[1], posts  # the claim, one word
    assert not [p for p in posts if "outerloop:release" in p]
    return run


def _goes_on(settings: Settings, number: int, run: RunRecord) -> None:
    """After the fix the same run reaches its pull request; no further post, no release."""
    state = tick_until(settings, in_review, timeout_s=300, pause_s=1.0)
    (after,) = state.runs.values()
    assert after.run_id == run.run_id and after.pr_number is not None and not after.ended
    posts = _posts(settings, number)
    assert not [p for p in posts if "outerloop:release" in p]
    assert len([p for p in posts if "delayed" in p]) == 1


def test_eval_cap_below_need_waits_for_the_fix_not_the_benchmark(tmp_path: Path) -> None:
    """``[compute.eval] time_minutes = 1`` where the benchmarks' pair jobs need 22 min:
    every pair would time out. Found before the first leg: the run waits naming the
    setting and the figure, never ``aborted`` nor told the benchmark failed."""
    settings = _home(tmp_path, "[compute.eval]\ntime_minutes = 1\n")
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    run = _waits_for_the_deployment(settings, number, "[compute.eval] time_minutes = 1",
                                    "eval_minutes")
    assert not any(j.purpose == "eval" for j in state_of(settings).jobs.values())
    assert all("benchmark failed" not in p for p in _posts(settings, number))
    _goes_on(_rewrite(settings, "time_minutes = 1\n", "time_minutes = 60\n"), number, run)


def test_session_cap_below_the_floor_waits_for_the_fix(tmp_path: Path) -> None:
    """``[compute.session] time_minutes = 1``: no climb or wake job can hold a session.
    The run waits at once (no grace, no recovery that times out the same way)."""
    settings = _home(tmp_path, "[compute.session]\ntime_minutes = 1\n")
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    run = _waits_for_the_deployment(settings, number, "[compute.session] time_minutes = 1",
                                    "floor")
    assert not any(j.purpose == "recover" for j in state_of(settings).jobs.values())
    _goes_on(_rewrite(settings, "time_minutes = 1\n", "time_minutes = 60\n"), number, run)


def test_refused_partition_waits_for_the_fix(tmp_path: Path) -> None:
    """``[compute.session] partition`` names one Slurm does not have: sbatch refuses
    the climb job. The run stays queued, its issue told once, and starts once fixed."""
    settings = _home(tmp_path, '[compute.session]\npartition = "nosuch"\n')
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    run = _waits_for_the_deployment(settings, number, "fix: the scheduler refuses",
                                    "nosuch", "[compute.session]", done=_start_failed_twice)
    assert not state_of(settings).jobs  # nothing was ever accepted
    _goes_on(_rewrite(settings, 'partition = "nosuch"\n', ""), number, run)


FAKE_CLI = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.0.0 (Claude Code)"; exit 0; fi
echo "fake claude: no model here" >&2
exit 1
"""


def test_agent_cli_missing_on_the_node_waits_not_a_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent CLI is on the tick host's PATH only: a ``[compute] setup`` line resets
    PATH in every job, as a compute node without the CLI would. Found before the first
    leg: the run waits naming the node, the CLI and the fix, never ``negative-result``
    ("agent CLI not found" is no verdict on a hypothesis that never ran); once
    ``[harness] binary`` names its path, the same run starts its first leg."""
    folder = tmp_path / "login-node-bin"
    folder.mkdir()
    cli = folder / "claude"
    cli.write_text(FAKE_CLI)
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    settings = _home(tmp_path, "")
    key = settings.home / "keys" / "model-key"
    key.write_text("sk-test-not-a-real-key\n")
    key.chmod(0o600)
    config = settings.home / "outerloop.toml"
    text = config.read_text()
    text = text.replace("[compute]\n", '[compute]\nsetup = ["export PATH=/usr/bin:/bin"]\n', 1)
    head, tail = text.split("[harness]\n", 1)
    tail = tail.split("\n", 2)[2]  # the scripted kind and its script
    config.write_text(f'{head}[harness]\nkind = "claude"\nbinary = "claude"\n'
                      f'model_key_file = "keys/model-key"\nmax_retries = 0\n{tail}')
    settings = load_settings(settings.home)
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    run = _waits_for_the_deployment(settings, number, "agent CLI is not found", "'claude'",
                                    "[harness] binary")
    assert state_of(settings).runs[run.run_id].legs == 0
    fixed = _rewrite(settings, 'binary = "claude"', f'binary = "{cli}"')
    state = tick_until(fixed, lambda s: s.runs[run.run_id].legs >= 1, timeout_s=240,
                       pause_s=1.0)
    after = state.runs[run.run_id]
    assert state.machine_wait(after) is None and list(state.runs) == [run.run_id]
    assert not [p for p in _posts(fixed, number) if "outerloop:release" in p]


NODE = os.environ.get("OUTERLOOP_SLURM_NODE", "vm")


def _slow_first_leg(tmp_path: Path) -> Path:
    """The 2-opt agent whose first leg starts with a 30 s shell step the first time only
    (a marker in the workspace, which the requeued job finds): time to fail its node
    under it, and no second wait once the job runs again."""
    import yaml

    from tests.support import AGENTS

    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    script["legs"][0].insert(0, {"shell": "test -e .outerloop/slow-once || "
                                          "{ touch .outerloop/slow-once; sleep 30; }"})
    path = tmp_path / "slow-2opt.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def _scontrol(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30)


@pytest.mark.node_down  # no other Slurm test beside it (tests/parallel.py)
@pytest.mark.xdist_group(SLURM_GROUP)
def test_node_failure_under_a_leg_waits_and_the_run_goes_on(tmp_path: Path) -> None:
    """The node fails while the climb job runs its first leg (``scontrol update
    state=down``): Slurm requeues the job. The run says so in status (the job, that it
    runs again by itself, the fix if the node stays down), records no ending, keeps its
    claim and posts nothing more; the job runs again and the run reaches its PR. The
    node is returned to service whatever happens (the local Slurm is shared)."""
    settings = jobs_import_this_checkout(make_home(tmp_path, _slow_first_leg(tmp_path),
                                                   compute="slurm"))
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, lambda s: any(r.leg_open for r in s.runs.values()),
                       timeout_s=120, pause_s=0.5)
    (run,) = state.runs.values()
    shown: dict[str, object] = {}
    try:
        done = _scontrol("update", f"nodename={NODE}", "state=down",
                         "reason=outerloop-test-node-failure")
        assert done.returncode == 0, done.stderr
        for _ in range(30):  # the requeued job waits ~10 s (BeginTime) before it runs again
            run_tick(settings)
            (shown,) = [r for r in json.loads(_status(settings, "--json"))["runs"]
                        if r["run"] == run.run_id]
            if shown["waiting"]:
                text = _status(settings)
                assert sum(1 for line in text.splitlines()
                           if "runs again by itself" in line) == 1, text
                break
    finally:
        if "down" in subprocess.run(["sinfo", "-h", "-n", NODE, "-o", "%T"],
                                    capture_output=True, text=True).stdout.lower():
            _scontrol("update", f"nodename={NODE}", "state=resume")
    waiting = str(shown.get("waiting"))
    assert "requeued" in waiting and "runs again by itself" in waiting and "fix:" in waiting
    state = state_of(settings)
    assert not state.runs[run.run_id].ended
    assert len(_posts(settings, number)) == 1  # the claim; a requeue heals by itself
    state = tick_until(settings, in_review, timeout_s=300, pause_s=1.0)
    (after,) = state.runs.values()
    assert after.run_id == run.run_id and after.pr_number is not None and not after.ended
    assert not [p for p in _posts(settings, number) if "outerloop:release" in p]
