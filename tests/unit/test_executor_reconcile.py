"""Reconciling write-ahead intents: an intent this version cannot read (a newer
version's action, or a damaged one) is marked failed, never performed and never fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from outerloop.config import Settings, TargetSettings
from outerloop.executor import Effects, Executor
from outerloop.ledger.state import rebuild
from outerloop.ledger.store import LedgerWriter, tick_file

TARGET = "owner/name"
KEY = "job:ol-r1-climb"


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
    assert state.intents == {} and state.failures == {KEY: 1}
