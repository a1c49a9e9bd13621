"""Bounded inputs through real ticks: a huge sparse file in scope is refused before the
seal, with the files named, and the run goes on (before, ``git add -A`` hashed 100 GB of
zeros until its timeout killed the attempt job, and every recovery died the same way
while the run held the target's attempt slot)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from outerloop.config import Settings, load_settings
from outerloop.ledger.state import RunRecord
from outerloop.run.paths import RunPaths
from tests.support import AGENTS, make_home, open_issue, tick_until

pytestmark = [pytest.mark.security, pytest.mark.e2e]

# the launch holds the run parked: a quick one lets the run park, wake and end (the
# script has no further leg) between two ticks, and a test waiting for the park misses it
# (seen in CI once jobs were forked from a warm interpreter)
LAUNCH = "launch --name try-2opt --minutes 5 --why 'hold the run parked' -- sleep 30"


def _sparse_script(tmp_path: Path) -> Path:
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    solver = script["legs"][0][1]  # the write of solver/tour.py
    script["legs"] = [
        [solver, {"shell": "truncate -s 100G solver/huge.bin"}, {"syscall": LAUNCH},
         {"syscall": "sleep"}],
        [{"expect": "solver/huge.bin (100.0 GiB)"}, {"shell": "rm solver/huge.bin"},
         {"syscall": LAUNCH}, {"syscall": "sleep"}],
    ]
    path = tmp_path / "sparse.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def jobs_use_this_checkout(settings: Settings) -> Settings:
    """Jobs get ``PYTHONPATH`` when the tests have one (a checkout tested beside an
    installed outerloop): the attempt job then runs the code under test."""
    config = settings.home / "outerloop.toml"
    text = config.read_text()
    config.write_text(text.replace('[compute]\nkind = "local"\n',
                                   '[compute]\nkind = "local"\npass_env = ["PYTHONPATH"]\n', 1))
    return load_settings(settings.home)


def _launched(run: RunRecord) -> bool:
    return bool(run.launches) or run.ended


def test_a_huge_sparse_file_is_refused_before_the_seal_and_the_run_goes_on(
        tmp_path: Path) -> None:
    settings = jobs_use_this_checkout(make_home(tmp_path, _sparse_script(tmp_path)))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, lambda s: any(_launched(r) and (r.sleeps or r.ended)
                                               for r in s.runs.values()), timeout_s=200)
    (run,) = state.runs.values()
    assert not run.ended, run.ending
    second = (RunPaths.of(settings.home, run.run_id).legs / "002-prompt.md").read_text()
    assert "Refused: these files are larger than the limit" in second
    assert "solver/huge.bin (100.0 GiB)" in second
    assert [x.name for x in run.launches] == ["try-2opt"] and run.sleeps == 1
    assert not [j for j in state.jobs.values() if j.purpose == "recover"]


STALL_ONCE = "test -e .outerloop/stalled || { touch .outerloop/stalled; sleep 300; }"


def _kill_job(settings: Settings, job_id: str) -> None:
    """SIGKILL a local job's runner and its tasks' process groups (as the OOM killer or
    a node failure would: no ending recorded, the run still ``running``)."""
    import contextlib
    import os
    import signal

    from outerloop.compute.local import LocalCompute
    from outerloop.compute.local_records import read_record

    record = read_record(LocalCompute(settings.home / "jobs").job_dir(job_id))
    assert record is not None and record.runner_pid is not None
    os.kill(record.runner_pid, signal.SIGKILL)
    for task in record.tasks.values():
        if task.pgid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(task.pgid, signal.SIGKILL)


def test_a_run_whose_job_died_mid_seal_is_recovered_and_frees_its_slot(tmp_path: Path) -> None:
    """The climb job is killed while its git held the seal's scratch index (the lock a
    git killed by its timeout leaves, seen with the sparse file): the recovery job seals
    and parks instead of dying on the lock, twice, until the sweep ends the run."""
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    solver = script["legs"][0][1]
    script["legs"] = [
        [solver, {"shell": STALL_ONCE}],
        [{"syscall": LAUNCH}, {"syscall": "sleep"}],
    ]
    path = tmp_path / "killed.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = jobs_use_this_checkout(make_home(tmp_path, path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, lambda s: any(
        (RunPaths.of(settings.home, r.run_id).ws / ".outerloop" / "stalled").exists()
        for r in s.runs.values()), timeout_s=120)
    (run,) = state.runs.values()
    paths = RunPaths.of(settings.home, run.run_id)
    (paths.root / "seal.index.lock").write_bytes(b"")  # what the killed git left
    (climb,) = [j for j in state.jobs.values() if j.purpose == "climb"]
    _kill_job(settings, climb.job_id)

    # the recovery leg launches, then parks on its sleep: a tick may fold the launch
    # before the park (a loaded machine), so wait for the park or an ending
    state = tick_until(settings, lambda s: any(
        _launched(r) and (r.state == "parked" or r.ended) for r in s.runs.values()),
        timeout_s=200)
    (run,) = state.runs.values()
    assert not run.ended, run.ending
    assert run.state == "parked" and [x.name for x in run.launches] == ["try-2opt"]
    assert [j.purpose for j in state.jobs.values()].count("recover") == 1
