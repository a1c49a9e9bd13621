"""The count of ``sleep``s with nothing staged in a row (``RunRecord.empty_sleeps``), as
the fold keeps it from each leg's committed request: what ends an idle run
(``attempt/request.py``, ``MAX_EMPTY_SLEEPS_IN_A_ROW``; the whole path in
tests/e2e/test_empty_legs.py)."""

from __future__ import annotations

from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.state import State

EMPTY = {"verb": "sleep", "launches": [], "submit": None, "messages": []}
TALKING = {**EMPTY, "messages": [{"to": "thread", "text": "still thinking"}]}
LAUNCH = {**EMPTY, "launches": [{"name": "try", "command": "python evaluate.py"}]}


def _count(*requests: dict[str, object] | None, refused: int | None = None) -> int:
    state = State()
    apply_event(state, "t.jsonl", ev.RunQueued(seq=1, at="2026-11-30T10:00:00.000000Z",
                                               run="r", target="o/n", benchmark="tour",
                                               agent="agent-01"))
    for leg, request in enumerate(requests, 1):
        apply_event(state, "r.jsonl", ev.LegEnded(
            seq=leg + 1, at="2026-11-30T11:00:00.000000Z", run="r", leg=leg,
            stop_reason="refused" if leg == refused else "end_turn", request=request))
    return state.runs["r"].empty_sleeps


def test_empty_sleeps_count_up_when_legs_sleep_with_nothing_or_only_messages_staged() -> None:
    assert _count(EMPTY, EMPTY) == 2
    assert _count(EMPTY, TALKING, EMPTY) == 3


def test_empty_sleeps_start_again_when_a_leg_stages_a_launch() -> None:
    assert _count(EMPTY, EMPTY, LAUNCH) == 0
    assert _count(EMPTY, LAUNCH, EMPTY) == 1


def test_empty_sleeps_hold_when_a_leg_commits_nothing_between_them() -> None:
    """Alternating an empty sleep with a leg that hands over nothing (which has its own
    bound, ``MAX_IMMEDIATE_RESUMES``, reset by any request) never starts the count again."""
    assert _count(EMPTY, None, EMPTY, None, EMPTY) == 3


def test_empty_sleeps_ignore_a_leg_the_model_api_refused() -> None:
    assert _count(EMPTY, LAUNCH, refused=2) == 1


def test_contract_docs_state_the_figures_the_code_enforces() -> None:
    from pathlib import Path

    from outerloop.attempt.leg import MAX_LEGS_PER_JOB
    from outerloop.attempt.request import MAX_EMPTY_SLEEPS_IN_A_ROW

    docs = Path(__file__).resolve().parents[2] / "docs"
    contract = (docs / "contract.md").read_text(encoding="utf-8")
    assert f"**{MAX_EMPTY_SLEEPS_IN_A_ROW} in a row** (`MAX_EMPTY_SLEEPS_IN_A_ROW`)" in contract
    assert f"**{MAX_LEGS_PER_JOB} per job** (`MAX_LEGS_PER_JOB`)" in contract
