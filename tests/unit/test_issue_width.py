"""An issue's width (``forge/width.py``): the contract's default, a writer's
``outerloop:width:N`` label over it, capped by the target's slots and the house maximum;
the contract field's errors name the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from outerloop.contract import contract_errors
from outerloop.forge.base import Association, Issue, LabelEvent
from outerloop.forge.width import MAX_ISSUE_WIDTH, issue_width
from tests.unit.test_contract import REFERENCE, _with

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _issue(*labels: str) -> Issue:
    return Issue(number=1, title="t", body="width: 7", author="someone",
                 author_association=Association.OWNER, state="open", labels=labels,
                 created_at=AT, updated_at=AT)


def _by(label: str, can_write: bool, minutes: int = 0) -> LabelEvent:
    return LabelEvent(label=label, actor="x", actor_can_write=can_write,
                      created_at=AT + timedelta(minutes=minutes))


def test_the_contracts_default_holds_without_a_label_and_the_body_never_counts() -> None:
    assert issue_width(_issue(), [], 1, 8).runs == 1
    assert issue_width(_issue(), [], 3, 8).runs == 3


def test_a_writers_label_overrides_the_default() -> None:
    label = "outerloop:width:3"
    assert issue_width(_issue(label), [_by(label, True)], 1, 8).runs == 3


def test_a_label_whose_latest_application_is_not_a_writers_does_not_count() -> None:
    label = "outerloop:width:3"
    width = issue_width(_issue(label), [_by(label, True), _by(label, False, 1)], 1, 8)
    assert width.runs == 1 and "write access" in width.why
    assert issue_width(_issue(label), [], 2, 8).runs == 2  # no timeline entry: not a writer's


def test_a_width_is_capped_by_the_slots_and_the_house_maximum() -> None:
    label = "outerloop:width:5"
    width = issue_width(_issue(label), [_by(label, True)], 1, 2)
    assert width.runs == 2 and "capped at 2" in width.why
    label = "outerloop:width:40"
    assert issue_width(_issue(label), [_by(label, True)], 1, 99).runs == MAX_ISSUE_WIDTH


def test_a_malformed_or_doubled_label_is_ignored_and_said_why() -> None:
    for labels in (("outerloop:width:0",), ("outerloop:width:two",),
                   ("outerloop:width:2", "outerloop:width:3")):
        events = [_by(label, True) for label in labels]
        width = issue_width(_issue(*labels), events, 1, 8)
        assert width.runs == 1 and "fix:" in width.why, labels


def test_the_contract_field_names_itself_when_out_of_range() -> None:
    for bad in ("0", "9", "two"):
        errors = contract_errors(_with("runs_per_week: 10",
                                       f"runs_per_week: 10\n  issue_width: {bad}", REFERENCE))
        assert len(errors) == 1 and errors[0].startswith("budgets.issue_width:"), errors
    assert contract_errors(_with("runs_per_week: 10", "runs_per_week: 10\n  issue_width: 4",
                                 REFERENCE)) == []
