"""What operators hit first: `status` says when the last tick ran, what failed and why
queued work waits; `tick` exits non-zero when an action failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import TARGET, make_home, open_issue


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", *args, "--home", str(home)],
                          capture_output=True, text=True, timeout=120)


def test_status_shows_the_last_tick_and_why_a_queued_run_waits_when_none_may_start(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace("max_new_runs_per_tick = 1",
                                                 "max_new_runs_per_tick = 0"))
    open_issue(settings, "Tours", "Please try something on tour.")
    assert cli(settings.home, "tick").returncode == 0
    data = json.loads(cli(settings.home, "status", "--json").stdout)
    assert data["last_tick_age_s"] is not None and data["last_tick_age_s"] < 60
    (run,) = data["runs"]
    assert run["state"] == "queued" and "max_new_runs_per_tick (0)" in run["waiting"]
    assert (data["runs_total"], data["runs_omitted"]) == (1, 0)
    every = json.loads(cli(settings.home, "status", "--json", "--all-runs").stdout)
    assert every["runs"] == data["runs"] and every["runs_total"] == 1
    text = cli(settings.home, "status").stdout
    assert "s ago), " in text and "0 failed" in text
    assert "waits: max_new_runs_per_tick (0)" in text


def test_status_names_the_targets_and_each_runs_target_when_printed(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace("max_new_runs_per_tick = 1",
                                                 "max_new_runs_per_tick = 0"))
    open_issue(settings, "Tours", "Please try something on tour.")
    assert cli(settings.home, "tick").returncode == 0
    data = json.loads(cli(settings.home, "status", "--json").stdout)
    assert data["targets"] == [TARGET]
    lines = cli(settings.home, "status").stdout.splitlines()
    assert f"targets: {TARGET}" in lines
    (run,) = [line for line in lines if line.startswith(f"  {data['runs'][0]['run']}")]
    assert f"  {TARGET}  queued" in run


def test_tick_exits_one_and_status_lists_the_failure_when_an_action_failed(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Tours", "Please try something on tour.")
    # The climb job cannot be submitted: sbatch refuses the partition (or is missing,
    # or no controller answers): the action fails either way.
    env = {**os.environ, "OUTERLOOP_COMPUTE_KIND": "slurm",
           "OUTERLOOP_COMPUTE_COMMAND_TIMEOUT_S": "10",
           "OUTERLOOP_COMPUTE_SESSION_PARTITION": "no-such-partition-here"}
    done = subprocess.run([sys.executable, "-m", "outerloop", "tick", "--quiet", "--home",
                           str(settings.home)], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed: job:" in done.stderr
    text = cli(settings.home, "status").stdout
    assert "1 failed" in text and "failed: job:" in text
