"""`outerloop demo`, as a new user runs it: one command, a PR at the end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.forge.local import LocalForge
from tests.e2e.explain_check import check_every_run, explained

pytestmark = pytest.mark.e2e


def test_demo_ends_with_open_pr_carrying_measurements_when_run_from_scratch(
        tmp_path: Path) -> None:
    home = tmp_path / "demo-home"
    done = subprocess.run([sys.executable, "-m", "outerloop", "demo", "--home", str(home)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "Pull request #" in done.stdout and "outerloop forge pr merge" in done.stdout
    (pr,) = LocalForge(home / "forge", "outerloop").list_prs("demo/tinytsp", "open")
    for needle in ("- baseline:", "- candidate:", "- pairs: ", "## Experiments",
                   "## Report", "Closes #1."):
        assert needle in pr.body
    # 3 couples, or 6 when the run's small share of the target's budget needs a second look
    assert re.search(r"- pairs: (3|6) couples", pr.body), pr.body
    decisions = [d["decision"] for d in explained(home, check_every_run(home)[0])]
    assert decisions[:2] == ["claimed", "post-claim"] and "admitted" in decisions
    assert decisions.index("verdict") < decisions.index("publish-ready") < \
        decisions.index("pr-ready")
    # the leaderboard: the demo's one slot, its one run and the PR it carried credited
    shown = subprocess.run([sys.executable, "-m", "outerloop", "status", "--json", "--home",
                            str(home)], capture_output=True, text=True, timeout=120,
                           check=False)
    (row,) = json.loads(shown.stdout)["leaderboard"]
    assert (row["target"], row["slot"], row["harness"]) == ("demo/tinytsp", 1, "scripted")
    assert (row["runs"], row["credited_prs"], row["merged_prs"]) == (1, 1, 0), row
    assert row["money_usd_per_credited_pr"] == row["money_usd"]
    assert row["gpu_hours_per_credited_pr"] == row["gpu_hours"]


def test_demo_refuses_non_empty_home_when_given_one(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep me")
    done = subprocess.run([sys.executable, "-m", "outerloop", "demo", "--home", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "not empty" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "x").read_text() == "keep me"
