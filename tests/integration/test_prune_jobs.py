"""Without an archive, a settled run's jobs/ dirs are pruned after the retention time."""

from __future__ import annotations

import time
from pathlib import Path

from outerloop.compute.base import JobSpec
from outerloop.compute.local import LocalCompute
from outerloop.kernel.tick import run_tick
from outerloop.ledger import events as ev
from outerloop.ledger import store
from tests.support import TARGET, make_home, state_of

RUN = "tour-20261130T010000-agent-01"


def test_jobs_dirs_are_pruned_and_the_report_kept_when_retention_passed(tmp_path: Path) -> None:
    settings = make_home(tmp_path, extra_toml="[archive]\nretention_days = 0\n")
    writer = store.LedgerWriter(store.run_file(settings.home, TARGET, RUN))
    writer.append(ev.RunQueued(run=RUN, target=TARGET, benchmark="tour", agent="agent-01"))
    run_dir = settings.home / "runs" / RUN
    (run_dir / "jobs" / "ol-x" / "0").mkdir(parents=True)
    (run_dir / "jobs" / "ol-x" / "0" / "stdout").write_text("log\n" * 1000)
    (run_dir / "report.md").write_text("# report\n")
    compute = LocalCompute(settings.home / "jobs")
    job_id = compute.submit(JobSpec(name=f"ol-{RUN}-climb", command="true", workdir=str(run_dir),
                                    log_dir=str(run_dir / "jobs" / "climb"), time_minutes=1,
                                    env={"OUTERLOOP_RUN": RUN}))
    other = compute.submit(JobSpec(name="ol-other-climb", command="true", workdir=str(tmp_path),
                                   log_dir=str(tmp_path / "other"), time_minutes=1,
                                   env={"OUTERLOOP_RUN": "other"}))
    while not all(o.state.terminal for o in compute.observe([job_id, other]).values()):
        time.sleep(0.1)
    writer.append(ev.RunEnded(run=RUN, ending="negative-result", report="# report\n", by="t"))

    report = run_tick(settings)
    assert not report.failures, report.failures
    assert state_of(settings).runs[RUN].pruned
    assert not (run_dir / "jobs").exists() and not (settings.home / "jobs" / job_id).exists()
    assert (run_dir / "report.md").read_text() == "# report\n"
    assert (settings.home / "jobs" / other).exists()
