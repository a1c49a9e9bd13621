"""A full disk under a running run: the machine's failure, not the agent's (issue 22).

The run's ``runs/`` is a small tmpfs of its own, in a private mount namespace
(``unshare``), and the agent's first leg fills it: the leg job dies of a real
``ENOSPC``, no mocks. The run must wait (not end, not spend its recoveries), say which
path is full and the fix in ``status``, on the board and in the tick's notes, and go on
once the operator frees the space.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

SCENARIO = r'''
import json, subprocess, sys, time
from pathlib import Path
import yaml
from outerloop.run.paths import RunPaths
from outerloop.kernel.tick import run_tick
from tests.support import TARGET, forge, make_home, open_issue, state_of

root = Path(sys.argv[1])
script = {"legs": [[  # the first time, the leg fills the disk and dies writing its report
    {"shell": "test -e .outerloop/filled || { touch .outerloop/filled; "
              "head -c 64M /dev/zero > .fill 2>/dev/null; }; true"},
    {"write": {"path": "report.md", "content": "# Nothing to try\n\nThe disk was full.\n"}},
    {"syscall": "stop --report report.md"}]]}
agent = root / "agent.yaml"
agent.write_text(yaml.safe_dump(script))
settings = make_home(root, agent)
runs = settings.home / "runs"
runs.mkdir(exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(runs)],
               check=True)
open_issue(settings, "Nothing", "Try nothing on tour.")

def tick_until(done, timeout_s):
    notes = []
    deadline = time.monotonic() + timeout_s
    while True:
        notes += run_tick(settings).notes
        state = state_of(settings)
        if done(state) or time.monotonic() > deadline:
            return state, notes
        time.sleep(0.3)

def climb_ended(state):
    return any(j.purpose == "climb" and j.terminal for j in state.jobs.values())

def over(state):
    return any(r.ended for r in state.runs.values())

state, notes = tick_until(climb_ended, 90)
state, more = tick_until(over, 8)  # long enough for two recoveries and the abort of old
notes += more
(run,) = state.runs.values()
wait = getattr(state, "machine_wait", lambda r: None)(run)
jobs_while_full = sorted(j.purpose for j in state.jobs.values())
status = subprocess.run([sys.executable, "-m", "outerloop", "status", "--home",
                         str(settings.home)], capture_output=True, text=True)
board = (settings.home / "board" / "CLIMB.md")
board_text = board.read_text() if board.exists() else ""
(RunPaths.of(settings.home, run.run_id).ws / ".fill").unlink()  # the operator frees space
final, after = tick_until(lambda s: all(r.ended for r in s.runs.values()), 120)
(done,) = final.runs.values()
comments = [c.body for c in forge(settings).list_comments(TARGET, run.issue)]
print(json.dumps({
    "ended_while_full": run.ended, "wait": wait is not None and wait.message,
    "paths": wait.paths if wait else [], "runs": str(runs),
    "jobs_while_full": jobs_while_full, "notes": notes, "status": status.stdout,
    "board": board_text, "ending": done.ending, "report": done.report[:2000],
    "second_prompt": (RunPaths.of(settings.home, run.run_id).legs / "002-prompt.md").read_text()
    if done.legs >= 2 else "",
    "purposes": sorted(j.purpose for j in final.jobs.values()),
    "exit_codes": sorted(str(j.exit_code) for j in final.jobs.values()),
    "released": any("releases this issue" in c for c in comments),
    "after": after}))
'''


def _in_private_mounts(tmp_path: Path, code: str) -> dict[str, Any]:
    """Run ``code`` (a Python scenario) in its own mount namespace, as root there."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("unshare/mount (util-linux) are not installed: no private tmpfs")
    argv = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    probe = subprocess.run([*argv, "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here ({probe.stderr.strip()}): no tmpfs "
                    f"to fill")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTERLOOP_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run([*argv, sys.executable, "-c", code, str(tmp_path)],
                          capture_output=True, text=True, timeout=400, check=False, cwd=REPO,
                          env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def full_disk_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _in_private_mounts(tmp_path_factory.mktemp("full-disk"), SCENARIO)


def test_run_waits_and_names_the_full_path_when_its_leg_job_died_of_enospc(
        full_disk_run: dict[str, Any]) -> None:
    seen = full_disk_run
    assert seen["ended_while_full"] is False
    assert seen["wait"], "the run never waited for space"
    assert seen["runs"] in seen["wait"] and "fix: free space" in seen["wait"]
    assert any(seen["runs"] in p for p in seen["paths"])
    assert "recover" not in seen["jobs_while_full"]
    assert seen["jobs_while_full"] == ["climb"]  # nothing delivered while still full
    assert any("waits for space" in n and seen["runs"] in n for n in seen["notes"])
    assert "waits for space" in seen["status"] and seen["runs"] in seen["status"]
    assert "waits for space" in seen["board"] and seen["runs"] in seen["board"]


def test_run_resumes_and_ends_normally_when_space_is_back(
        full_disk_run: dict[str, Any]) -> None:
    seen = full_disk_run
    assert seen["ending"] == "negative-result", seen["report"]
    assert "previous session was interrupted" in seen["second_prompt"]
    assert "retry" in seen["purposes"] and "recover" not in seen["purposes"]
    assert "75" in seen["exit_codes"]  # the climb job's own word: no space
    assert seen["released"] is False  # the issue was never let go as a failed start
    assert any("space is back" in n for n in seen["after"])
