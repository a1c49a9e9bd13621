"""A full disk while the gate measures a candidate: the machine's failure, not an eval
error (issue 22; chaos found it: two runs of six ended ``aborted`` on ``eval-error``).

The run's ``runs/`` is a small tmpfs of its own in a private mount namespace. Each eval
side sleeps a little before it measures, so the disk is filled (by the operator's
mistake, here the test) while the submission's pairs run, and again while the pairs
run a second time: pair jobs die of a real ``ENOSPC`` twice. The run must wait for
space, never record an eval error nor end, and, once space is back, measure the pairs
again and reach its pull request.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_full_disk_run import _in_private_mounts
from tests.support import in_process_target

pytestmark = pytest.mark.e2e


SCENARIO = r'''
import json, subprocess, sys, time
from pathlib import Path
from outerloop.kernel.tick import run_tick
from tests.support import make_home, open_issue, state_of

root = Path(sys.argv[1])
settings = make_home(root, target_dir=root / "target")
runs = settings.home / "runs"
runs.mkdir(exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(runs)],
               check=True)
open_issue(settings, "Shorter tours", "Try 2-opt on tour.")

def tick_until(done, timeout_s):
    deadline = time.monotonic() + timeout_s
    while True:
        run_tick(settings)
        state = state_of(settings)
        if done(state) or time.monotonic() > deadline:
            return state
        time.sleep(0.3)

def parked_on_eval(state):
    return any(r.park_reason == "eval" for r in state.runs.values())

def waits_for_space(state):
    return any(state.machine_wait(r) is not None for r in state.runs.values())

def rerun_parked(state):
    return any(j.purpose == "eval" and j.name.endswith("-r1") for j in state.jobs.values()) \
        and parked_on_eval(state)

def full(fill):
    subprocess.run(["sh", "-c", f"head -c 64M /dev/zero > {fill} 2>/dev/null; true"])

fill = runs / ".operator-fill"
state = tick_until(parked_on_eval, 180)
full(fill)  # the first pairs die of ENOSPC
state = tick_until(waits_for_space, 120)
first_wait = next(state.machine_wait(r).job_id for r in state.runs.values()
                  if state.machine_wait(r) is not None)
fill.unlink()
state = tick_until(rerun_parked, 180)  # measured again: the pairs that died run again
full(fill)  # ... and die of ENOSPC again (a disk that fills twice: chaos's windows)
state = tick_until(lambda s: any(r.verdicts or r.ended for r in s.runs.values())
                   or any(s.machine_wait(r) is not None and s.machine_wait(r).job_id
                          != first_wait for r in s.runs.values()), 120)
for _ in range(6):  # a few more ticks while still full: nothing may end the run
    run_tick(settings)
    time.sleep(0.3)
state = state_of(settings)
(run,) = state.runs.values()
while_full = {"ended": run.ended, "ending": run.ending,
              "verdicts": [v.verdict for v in run.verdicts],
              "wait": bool(waits_for_space(state))}
fill.unlink()  # the operator frees the space
final = tick_until(lambda s: all(r.pr_number is not None or r.ended
                                 for r in s.runs.values()), 240)
(done,) = final.runs.values()
print(json.dumps({"while_full": while_full, "ended": done.ended, "ending": done.ending,
                  "pr": done.pr_number, "verdicts": [v.verdict for v in done.verdicts],
                  "purposes": sorted(j.purpose for j in final.jobs.values())}))
'''


@pytest.fixture(scope="module")
def full_disk_eval(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("full-disk-eval")
    target = root / "target"
    in_process_target(target)
    contract = target / ".outerloop.yaml"
    contract.write_text(contract.read_text().replace(
        "command: python evaluate.py --bench tour --json",
        "command: sleep 4 && python evaluate.py --bench tour --json"))
    return _in_private_mounts(root, SCENARIO)


def test_a_pair_job_that_died_of_enospc_waits_for_space_and_never_ends_the_run(
        full_disk_eval: dict[str, Any]) -> None:
    seen = full_disk_eval["while_full"]
    assert seen["wait"], "the run never waited for space"
    assert seen["ended"] is False, seen["ending"]
    assert "eval-error" not in seen["verdicts"], seen["verdicts"]


def test_the_pairs_are_measured_again_once_space_is_back_and_the_run_reaches_its_pr(
        full_disk_eval: dict[str, Any]) -> None:
    seen = full_disk_eval
    assert seen["pr"] is not None, (seen["ending"], seen["verdicts"])
    assert seen["verdicts"] == ["improved"], seen["verdicts"]
    assert "retry" in seen["purposes"]

