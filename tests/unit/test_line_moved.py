"""A research line a person rewrote (issue 49, point 6): the slot's line branch was
force-pushed, so the run's line commit does not contain its head. The push stays
fast-forward only (the person's commits are never overwritten), the run's work is not
lost (it is saved on a fresh branch, ``agents/<agent-id>-2``), the run's issue is told
where, and the slot is free again for its next run, which starts from the person's
line. Before this (main at 0930fb0) the push waited on a human with nothing a human
could do short of deleting their commits, and the slot's next runs never started
(``slot_busy``)."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from outerloop.clock import now
from outerloop.config import Settings
from outerloop.errors import BranchMoved
from outerloop.forge.local import LocalForge
from outerloop.human_waits import human_waits
from outerloop.kernel.actions import PushLine, intent_for
from outerloop.kernel.lanes.lines import moved_post, push_of, slot_busy
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import LineRecord, State
from outerloop.line_paths import FRESH_LINES, line_head, line_heads
from outerloop.retry_rule import Cause
from tests.support import TARGET

LINE = "agents/a"
AT = "2026-11-30T11:00:00.000000Z"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def _commit(work: Path, name: str, text: str) -> str:
    (work / name).write_text(text)
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", name)
    return _git(work, "rev-parse", "HEAD")


def test_forge_refuses_to_overwrite_a_line_a_person_rewrote(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _git(src, "init", "-q", "-b", "main")
    base = _commit(src, "a.py", "a = 1\n")
    forge = LocalForge(tmp_path / "forge", "outerloop")
    forge.import_repo(src, TARGET)
    forge.push(TARGET, src, base, LINE)
    kernel = _commit(src, "AGENT_MEMORY.md", "the run's memory\n")  # the run's line
    person = tmp_path / "person"
    _git(tmp_path, "clone", "-q", str(forge.repo_dir(TARGET)), str(person))
    theirs = _commit(person, "fix.py", "theirs\n")
    _git(person, "push", "-q", "--force", "origin", f"{theirs}:refs/heads/{LINE}")
    with pytest.raises(BranchMoved):
        forge.push(TARGET, src, kernel, LINE)
    forge.push(TARGET, src, kernel, line_head(LINE, [LINE]))
    assert forge.branch_head(TARGET, LINE) == theirs  # the person's commits stay
    assert forge.branch_head(TARGET, f"{LINE}-2") == kernel  # the run's work is kept


def _state(head: str = "b" * 40) -> State:
    state = State()
    apply_event(state, "t.jsonl", ev.RunQueued(seq=1, at=AT, run="r1", target=TARGET,
                                               benchmark="tour", agent="a", issue=3))
    run = state.runs["r1"]
    run.line = LineRecord(branch=LINE, start="a" * 40, head=head, pushed="a" * 40)
    return state


def _fold(state: State, push: PushLine, seq: int, cause: str = "") -> None:
    apply_event(state, "t.jsonl", ev.Intent(seq=seq, at=AT, action=intent_for(push).action))
    outcome: ev.Event = ev.Failed(seq=seq + 1, at=AT, run="r1", key=push.key, error="moved",
                                  cause=cause) if cause \
        else ev.Done(seq=seq + 1, at=AT, key=push.key, result=EffectResult(sha=push.sha))
    apply_event(state, "t.jsonl", outcome)


def _view(state: State) -> TickView:
    return TickView(state=state, obs=Observations(now=now() + timedelta(seconds=1)),
                    settings=Settings(home=Path("/nonexistent")))


def test_line_goes_to_a_fresh_branch_and_the_issue_is_told_when_a_person_rewrote_it(
        ) -> None:
    state = _state()
    first = push_of(_view(state), state.runs["r1"])
    assert first is not None and first.branch == LINE
    assert moved_post(state.runs["r1"], first) is None
    _fold(state, first, 2, cause=str(Cause.MOVED))
    run = state.runs["r1"]
    assert run.line is not None and run.line.moved == [LINE]
    assert human_waits(state) == []  # handled by itself: no person is asked
    assert slot_busy(_view(state), TARGET, "a", "r2")  # still unsaved
    fresh = push_of(_view(state), run)
    assert fresh is not None and fresh.branch == f"{LINE}-2" and fresh.sha == "b" * 40
    post = moved_post(run, fresh)
    assert post is not None and post.number == 3
    assert f"`{LINE}-2`" in post.body and "never overwrites" in post.body
    _fold(state, fresh, 4)
    assert not run.line.unpushed and push_of(_view(state), run) is None
    assert not slot_busy(_view(state), TARGET, "a", "r2")  # the next run may start


def test_line_push_waits_on_a_human_once_every_fresh_branch_was_moved() -> None:
    state = _state()
    every = line_heads(LINE)
    assert len(every) == FRESH_LINES + 1
    for n, branch in enumerate(every):
        push = push_of(_view(state), state.runs["r1"])
        assert push is not None and push.branch == branch
        _fold(state, push, 2 + 2 * n, cause=str(Cause.MOVED))
    assert [w.cause for w in human_waits(state)] == [Cause.MOVED]
