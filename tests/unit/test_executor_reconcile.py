"""The executor's ledger records: an intent this version cannot read (a newer
version's action, or a damaged one) is marked failed, never performed and never fatal;
nothing secret reaches a recorded event or intent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from outerloop.config import Settings, TargetSettings
from outerloop.kernel.actions import PostComment, RecordEvent
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, rebuild, tick_file

TARGET = "owner/name"
KEY = "job:ol-r1-climb"
SECRET = "sk-test-0123456789abcdef"


def _executor(home: Path) -> Executor:
    settings = Settings(home=home, targets=[TargetSettings(repo=TARGET)])
    return Executor(Effects(settings, secrets=[SECRET]),
                    lambda target: LedgerWriter(tick_file(home, target)))


def _intent_line(action: dict[str, object]) -> str:
    """An intent as a (possibly newer) writer put it on disk."""
    return json.dumps({"v": 1, "seq": 1, "at": "2026-11-30T12:00:00.000000Z", "lc": 1,
                       "kind": "intent", "key": KEY, "action": action}) + "\n"


@pytest.mark.parametrize("action", [
    {"kind": "teleport_job", "target": TARGET, "where": "moon"},
    {"kind": "cancel_job", "target": TARGET, "job_id": "5", "why": "", "priority": 9},
    {"kind": "cancel_job", "target": TARGET},
], ids=["newer-kind", "newer-field", "damaged"])
def test_unreadable_intent_is_marked_failed_when_reconciled(
        tmp_path: Path, action: dict[str, object]) -> None:
    path = tick_file(tmp_path, TARGET)
    path.parent.mkdir(parents=True)
    path.write_text(_intent_line(action))
    (pending,) = rebuild(tmp_path, use_cache=False).intents.values()
    settings = Settings(home=tmp_path, targets=[TargetSettings(repo=TARGET)])
    executor = Executor(Effects(settings), lambda target: LedgerWriter(tick_file(tmp_path,
                                                                                 target)))
    outcome = executor.reconcile(pending)
    assert not outcome.ok and outcome.action is None and outcome.error == "unreadable intent"
    state = rebuild(tmp_path, use_cache=False)
    assert state.intents == {} and {k: f.count for k, f in state.failures.items()} == {KEY: 1}


def test_recorded_event_is_redacted_when_it_carries_a_secret(tmp_path: Path) -> None:
    event = ev.Feedback(source_id="c1", author="m", text=f"use {SECRET} please")
    assert _executor(tmp_path).run(RecordEvent(target=TARGET, run="r1", event=event)).ok
    text = tick_file(tmp_path, TARGET).read_text()
    assert SECRET not in text and "use [REDACTED] please" in text and '"run":"r1"' in text


def test_effect_is_refused_and_recorded_redacted_when_it_carries_a_secret(
        tmp_path: Path) -> None:
    post = PostComment(target=TARGET, run="r1", number=1, body=f"key: {SECRET}",
                       marker_kind="reply", marker_key="r1-1")
    outcome = _executor(tmp_path).run(post)
    assert not outcome.ok and "secret" in (outcome.error or "")
    assert SECRET not in tick_file(tmp_path, TARGET).read_text()
    state = rebuild(tmp_path, use_cache=False)
    assert state.intents == {} and {k: f.count for k, f in state.failures.items()} == {post.key: 1}
    (line,) = [json.loads(x) for x in tick_file(tmp_path, TARGET).read_text().splitlines()
               if '"intent"' in x]
    assert line["action"]["kind"] == "unreadable"
