"""Folding events into State, and the incremental cache agreeing with a cold fold."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from outerloop.compute.base import JobSpec
from outerloop.kernel.actions import CancelJob, SubmitJob, intent_for
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, rebuild, run_file, tick_file
from outerloop.ledger.events import EffectResult
from outerloop.ledger.fold import compact
from outerloop.ledger.state import Ending, ParkReason, RunRecord, RunState, State

TARGET = "owner/name"


def _queue(writer: LedgerWriter, run: str, issue: int = 1) -> None:
    writer.append(ev.RunQueued(run=run, target=TARGET, benchmark="tour", agent="agent-01",
                               issue=issue, hypothesis="h"))


def test_run_ends_once_when_two_endings_are_recorded(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append(ev.RunEnded(run="r1", ending="negative-result"))
    tick.append(ev.RunEnded(run="r1", ending="aborted"))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert run.state == "ended" and run.ending == "negative-result"


def test_an_unknown_ending_is_kept_as_written_when_a_newer_version_recorded_it(
        tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    tick.append(ev.RunEnded(run="r1", ending="withdrawn"))
    cold = rebuild(tmp_path).runs["r1"]
    warm = rebuild(tmp_path).runs["r1"]  # from the pickled cache
    for run in (cold, warm):
        assert run.ended and run.ending == "withdrawn" and f"{run.ending}" == "withdrawn"
        assert isinstance(run.ending, Ending) and json.dumps(run.ending) == '"withdrawn"'


def test_run_state_park_reason_and_ending_print_as_plain_strings_when_serialised(
        tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append(ev.Parked(run="r1", reason="jobs", job_ids=["5"], wake_job="6"))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert (run.state, run.park_reason) == (RunState.PARKED, ParkReason.JOBS)
    assert json.dumps([run.state, run.park_reason]) == '["parked", "jobs"]'
    assert f"{run.state}: {run.park_reason}" == "parked: jobs" and str(run.state) == "parked"
    runw.append(ev.RunEnded(run="r1", ending="aborted"))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert run.ending is Ending.ABORTED and json.dumps(run.ending) == '"aborted"'


def test_a_verdict_is_untold_until_a_leg_that_showed_it_ends(tmp_path: Path) -> None:
    """Feedback and a verdict that sends the agent back count as told only when a leg
    that showed them has ended (a recovery leg shows what a dead leg never finished)."""
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append(ev.Feedback(run="r1", source_id="c1", author="m", text="why?"))
    runw.append(ev.Verdict(run="r1", verdict="no-improvement", benchmark="tour"))
    runw.append(ev.LegStarted(run="r1", leg=2, role="wake"))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert run.verdict_untold and list(run.undelivered) == ["c1"]  # its leg never ended
    runw.append(ev.LegEnded(run="r1", leg=2, stop_reason="end_turn", delivered=["c1"]))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    assert not run.verdict_untold and not run.undelivered
    runw.append(ev.Verdict(run="r1", verdict="improved", benchmark="tour"))
    assert not rebuild(tmp_path, use_cache=False).runs["r1"].verdict_untold  # no leg tells it


def test_a_look_of_the_sequential_gate_is_folded_once_when_a_recovery_wake_repeats_it(
        tmp_path: Path) -> None:
    """A wake killed after recording its look is followed by one that records it again:
    the first record holds (its numbers decided), and the park's look is folded."""
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append(ev.SeedsDrawn(run="r1", submission=1, seeds=[5, 6, 7], salt="s", tree="t1"))
    first = ev.GateLook(run="r1", submission=1, look=0, pairs=[("1", "2")] * 3,
                        decision="more")
    runw.append(first)
    runw.append(msgspec.structs.replace(first, pairs=[("9", "9")] * 3, decision="stop"))
    runw.append(ev.Parked(run="r1", reason="eval", job_ids=["8"], retry=True, look=1,
                          first_pair=3))
    run = rebuild(tmp_path, use_cache=False).runs["r1"]
    (look,) = run.looks[1]
    assert look.decision == "more" and look.pairs == [("1", "2")] * 3
    assert (run.park_look, run.park_first_pair, run.trees) == (1, 3, {1: "t1"})


def test_a_settled_run_keeps_only_its_credited_verdicts_when_compacted() -> None:
    run = RunRecord(run_id="r1", target=TARGET, benchmark="tour", agent="agent-01",
                    issue=None, issue_title="", hypothesis="h", queued_at="2026-01-01",
                    state=RunState.ENDED, ending=Ending.MERGED)
    measured = [ev.Verdict(seq=n, at="2026-01-02", verdict=verdict, benchmark="tour")
                for n, verdict in enumerate(["no-improvement", "improved", "eval-error"])]
    run.verdicts = list(measured)
    run.launches = [ev.Launched(seq=9, at="2026-01-02", sleep=1, name="a", job_id="5",
                                minutes=5, command="true", seal="s")]
    state = State(runs={"r1": run})
    assert compact(state, record_lane=False) == 1
    assert run.settled and run.verdicts == [measured[1]] and run.launches == []


def test_intent_without_done_is_pending_when_folded(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    first, second = CancelJob(target=TARGET, job_id="1"), CancelJob(target=TARGET, job_id="2")
    tick.append(intent_for(first))
    tick.append(intent_for(second))
    tick.append(ev.Done(key=second.key, result=EffectResult(accepted=True)))
    state = rebuild(tmp_path, use_cache=False)
    assert [p.key for p in state.intents.values()] == [first.key]


def test_submitted_job_is_registered_when_done_follows_intent(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    spec = JobSpec(name="ol-r1-climb", command="true", workdir=str(tmp_path), log_dir=str(tmp_path),
                   time_minutes=5)
    tick.append(intent_for(SubmitJob(target=TARGET, run="r1", purpose="climb", spec=spec)))
    tick.append(ev.Done(run="r1", key="job:ol-r1-climb", result=EffectResult(job_id="10000001")))
    state = rebuild(tmp_path, use_cache=False)
    assert state.jobs["10000001"].purpose == "climb"
    assert state.runs["r1"].admitted and state.runs["r1"].climb_job == "10000001"


def test_incremental_fold_matches_cold_fold_when_files_grow(tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick, "r1")
    rebuild(tmp_path)
    runw = LedgerWriter(run_file(tmp_path, TARGET, "r1"))
    runw.append(ev.LegStarted(run="r1", leg=1, role="climb"))
    runw.append(ev.Parked(run="r1", reason="jobs", job_ids=["5"], wake_job="6"))
    _queue(tick, "r2", issue=2)
    warm = rebuild(tmp_path)
    cold = rebuild(tmp_path, use_cache=False, save_cache=False)
    assert warm.fresh == 3
    assert warm.runs == cold.runs and warm.events == cold.events


def test_quiet_rebuild_folds_nothing_when_no_file_changed(tmp_path: Path) -> None:
    _queue(LedgerWriter(tick_file(tmp_path, TARGET)), "r1")
    rebuild(tmp_path)
    again = rebuild(tmp_path)
    assert again.fresh == 0 and "r1" in again.runs


def test_a_file_that_shrank_is_left_out_of_the_fold_and_its_target_frozen(
        tmp_path: Path) -> None:
    """Ledger files only grow: one that shrank lost lines the kernel acted on (before,
    the cache was dropped and the shorter file folded: r2 was forgotten)."""
    path = tick_file(tmp_path, TARGET)
    writer = LedgerWriter(path)
    _queue(writer, "r1")
    _queue(writer, "r2", issue=2)
    rebuild(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0])
    state = rebuild(tmp_path)
    assert set(state.runs) == {"r1", "r2"}
    assert state.frozen_target(TARGET) and "the file shrank" in state.ledger_damage[0]
    assert rebuild(tmp_path).frozen_target(TARGET)  # until it is whole


def test_bytes_rewritten_in_place_are_damage_when_the_file_did_not_shrink(
        tmp_path: Path) -> None:
    """Same inode, longer than the fold had read, but what it read was rewritten: the
    tail digest kept in the mark tells (size and inode alone would not)."""
    path = tick_file(tmp_path, TARGET)
    writer = LedgerWriter(path)
    _queue(writer, "r1")
    rebuild(tmp_path)
    inode = path.stat().st_ino
    with path.open("r+b") as handle:
        handle.write(b" " * 40)  # the first line's start overwritten
        handle.seek(0, 2)
        handle.write(b"\n" * 100)
    assert path.stat().st_ino == inode
    state = rebuild(tmp_path)
    assert state.frozen_target(TARGET)
    assert "changed" in state.ledger_damage[0]


def test_a_run_job_stops_when_a_file_it_folds_is_damaged(tmp_path: Path) -> None:
    """A partial fold (a run's job, on top of the tick's cache) never acts on a damaged
    file: it raises, the job ends, the sweep recovers it once the tick healed the file."""
    from outerloop.ledger.book import LedgerDamaged

    path = tick_file(tmp_path, TARGET)
    writer = LedgerWriter(path)
    _queue(writer, "r1")
    _queue(writer, "r2", issue=2)
    rebuild(tmp_path)
    path.write_bytes(path.read_bytes().splitlines(keepends=True)[0])
    with pytest.raises(LedgerDamaged, match="the file shrank"):
        rebuild(tmp_path, files=[path])


def _old_line(seq: int, kind: str, **fields: object) -> str:
    """A line as the writer before typed events wrote it: a plain dict, ``run`` only when
    set, the action as pydantic dumped it (every field), the result a plain object."""
    return json.dumps({"v": 1, "seq": seq, "at": f"2026-11-30T12:00:0{seq}.000000Z",
                       "lc": seq, "kind": kind, **fields}, separators=(",", ":")) + "\n"


def test_old_ledger_lines_fold_as_before_when_read_by_the_typed_fold(tmp_path: Path) -> None:
    spec = {"name": "ol-r1-climb", "command": "run", "workdir": "/w", "log_dir": "/l",
            "time_minutes": 30, "cpus": 1, "mem_mb": None, "gpus": 2, "nodes": 1,
            "gpu_type": None, "gpu_request": None, "partition": None, "account": None,
            "qos": None, "constraint": None, "extra_sbatch": [], "setup": [], "nice": 0,
            "array_size": None, "array_concurrency": None, "after_any": [],
            "singleton": False, "begin": None, "requeue": None, "env": {"A": "1"}}
    post = {"kind": "post_comment", "target": TARGET, "run": "r1", "number": 1,
            "body": "report", "marker_kind": "report", "marker_key": "r1"}
    path = tick_file(tmp_path, TARGET)
    path.parent.mkdir(parents=True)
    path.write_text("".join([
        _old_line(1, "run_queued", run="r1", target=TARGET, benchmark="tour",
                  agent="agent-01", issue=1),
        _old_line(2, "intent", run="r1", key="job:ol-r1-climb", action={
            "target": TARGET, "run": "r1", "kind": "submit_job", "purpose": "climb",
            "launch": None, "spec": spec}),
        _old_line(3, "done", run="r1", key="job:ol-r1-climb", result={"job_id": "7"}),
        _old_line(4, "intent", run="r1", key="comment:r1", action=post),
        _old_line(5, "done", run="r1", key="comment:r1", result={"comment_id": 9}),
    ]))
    state = rebuild(tmp_path, use_cache=False)
    assert state.malformed == 0 and state.intents == {}
    job = state.jobs["7"]
    assert (job.name, job.purpose, job.gpus, job.run) == ("ol-r1-climb", "climb", 2, "r1")
    run = state.runs["r1"]
    assert run.admitted and run.climb_job == "7" and run.report_posted
    assert state.done_keys["comment:r1"] == EffectResult(comment_id=9)


def test_done_result_is_written_as_the_plain_object_it_always_was(tmp_path: Path) -> None:
    path = tick_file(tmp_path, TARGET)
    LedgerWriter(path).append(ev.Done(key="job:a", result=EffectResult(job_id="7")))
    assert json.loads(path.read_text())["result"] == {"job_id": "7"}
