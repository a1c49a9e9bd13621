"""The tick's look at the machine: free space where the run's jobs write, and a failed
leg job's stderr naming a full disk (a process the kernel does not control says so
only there). Real files under a real home; the lanes then decide (``test_machine_waits``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from outerloop.kernel.executor import Effects
from outerloop.kernel.observations import Observations
from outerloop.kernel.observe import observe_machine
from outerloop.ledger.state import JobRecord, RunRecord, State
from outerloop.run.paths import RunPaths
from tests.support import TARGET, make_home

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
WORDS = "fatal: unable to write new index file: No space left on device"


def _failed_leg(tmp_path: Path, stderr: str | None, *, state: str = "failed",
                link_to: Path | None = None) -> tuple[Observations, str, Path]:
    settings = make_home(tmp_path)
    run = RunRecord(run_id="r1", target=TARGET, benchmark="tour", agent="agent-01", issue=1,
                    issue_title="t", hypothesis="h", queued_at="", state="running",
                    admitted=True, job_ids=["7"])
    job = JobRecord(job_id="7", name="ol-r1-climb", purpose="climb", run="r1", target=TARGET,
                    launch=None, submitted_at="", state=state, exit_code=1)
    log = RunPaths.of(settings.home, "r1").job_dir(job.name)
    log.mkdir(parents=True)
    if stderr is not None:
        (log / "stderr").write_text(stderr)
    if link_to is not None:
        (log / "stderr").symlink_to(link_to)
    obs = Observations(now=NOW)
    observe_machine(State(runs={"r1": run}, jobs={"7": job}), Effects(settings), obs)
    return obs, str(settings.home), log


def test_tick_reads_the_no_space_line_when_a_failed_leg_jobs_stderr_has_one(
        tmp_path: Path) -> None:
    obs, home, _ = _failed_leg(tmp_path, "Cloning...\n" + WORDS + "\n")
    assert obs.no_space == {"7": WORDS}
    assert obs.space and obs.space[0].path == home and obs.space[0].total_bytes > 0


def test_tick_finds_nothing_when_the_stderr_is_missing_or_says_otherwise(
        tmp_path: Path) -> None:
    assert _failed_leg(tmp_path / "a", None)[0].no_space == {}
    assert _failed_leg(tmp_path / "b", "Traceback: KeyError\n")[0].no_space == {}
    assert _failed_leg(tmp_path / "c", WORDS, state="completed")[0].no_space == {}


def test_tick_does_not_follow_a_symlinked_stderr_when_reading_its_tail(
        tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere"
    secret.write_text(WORDS)
    assert _failed_leg(tmp_path / "h", None, link_to=secret)[0].no_space == {}
