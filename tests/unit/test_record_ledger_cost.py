"""A research-log record's intent holds the facts that name its files (their hashes), not
the rendered files: what the ledger keeps per record stays bounded at any history size,
and a ledger whose old records carry rendered files still folds."""

from __future__ import annotations

from pathlib import Path

import msgspec

from outerloop.config import Settings, TargetSettings
from outerloop.kernel.actions import PublishRecord, intent_for
from outerloop.kernel.lanes.record import plan_target
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import RunRecord, State

TARGET = "demo/tinytsp"
RECORD_LEDGER_MAX_BYTES = 3_000
"""What one record's intent and done may add to the ledger (a real run has about three)."""


def _run(n: int) -> RunRecord:
    at = f"2026-01-{1 + n // 100:02d}T{n % 24:02d}:{n % 60:02d}:00.000000Z"
    run = RunRecord(run_id=f"tour-{n:05d}-agent-01", target=TARGET, benchmark="tour",
                    agent="agent-01", issue=n, issue_title=f"Idea {n}",
                    hypothesis=f"Idea {n}\n\n" + "why " * 60, queued_at=at, updated_at=at,
                    state="ended", admitted=True, ending="negative-result",
                    report=f"# Run {n}\n\n" + "nothing gained " * 80)
    run.verdicts.append(ev.Verdict(seq=0, at=at, verdict="no-improvement", benchmark="tour",
                                   baseline="10", candidate="10", seeds=1))
    return run


def _publish(state: State, action: PublishRecord, seq: int) -> int:
    """Fold the record's intent and done as the executor writes them; their bytes."""
    file = "demo__tinytsp/tick.jsonl"
    intent = msgspec.structs.replace(intent_for(action), seq=seq, at="2026-02-01")
    done = ev.Done(seq=seq + 1, at="2026-02-01", key=action.key,
                   result=EffectResult(sha="a" * 40, reports=action.reports,
                                       summary=action.summary, board=action.board))
    apply_event(state, file, intent)
    apply_event(state, file, done)
    return len(msgspec.json.encode(intent)) + len(msgspec.json.encode(done))


def test_a_record_adds_bounded_ledger_bytes_when_the_history_is_long(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, targets=[TargetSettings(repo=TARGET)])
    state = State()
    sizes = []
    for n in range(250):
        run = _run(n)
        state.runs[run.run_id] = run
        action = plan_target(state, TARGET, settings)
        assert action is not None and "board/index.html" in action.files
        sizes.append(_publish(state, action, 2 * n + 1))
    assert max(sizes) <= RECORD_LEDGER_MAX_BYTES, sizes[-1]


def test_an_old_record_with_rendered_files_still_folds() -> None:
    state = State()
    state.runs["tour-00001-agent-01"] = _run(1)
    old = PublishRecord(target=TARGET, branch="research-log",
                        files={"board/index.html": "<html>...</html>", "BENCHMARKS.md": "#"},
                        reports=["tour-00001-agent-01"], summary="s1", board="b1", digest="d1")
    _publish(state, old, 1)
    assert state.runs["tour-00001-agent-01"].recorded
    assert state.published[TARGET].summary == "s1" and state.published[TARGET].board == "b1"
