"""The standing rule: who may steer the kernel."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from outerloop.forge.base import APPROVED_LABEL, Association, Issue, LabelEvent
from outerloop.forge.standing import (
    approved_by_writer,
    author_has_standing,
    issue_has_standing,
)

AT = datetime(2026, 1, 1, tzinfo=UTC)


def issue(association: Association, labels: tuple[str, ...] = ()) -> Issue:
    return Issue(number=1, title="t", body="b", author="someone",
                 author_association=association, state="open", labels=labels,
                 created_at=AT, updated_at=AT)


def labelled(actor_can_write: bool, minutes: int = 0) -> LabelEvent:
    return LabelEvent(label=APPROVED_LABEL, actor="x", actor_can_write=actor_can_write,
                      created_at=AT + timedelta(minutes=minutes))


def test_issue_has_standing_when_author_is_a_collaborator() -> None:
    assert issue_has_standing(issue(Association.COLLABORATOR), [])


def test_issue_has_no_standing_when_author_has_none() -> None:
    assert not issue_has_standing(issue(Association.NONE), [])


def test_issue_has_no_standing_when_author_is_only_a_contributor() -> None:
    assert not issue_has_standing(issue(Association.CONTRIBUTOR), [])


def test_issue_has_no_standing_when_approved_label_applied_without_write_access() -> None:
    outsider = issue(Association.NONE, (APPROVED_LABEL,))
    assert not issue_has_standing(outsider, [labelled(actor_can_write=False)])


def test_issue_has_standing_when_approved_label_applied_by_a_writer() -> None:
    outsider = issue(Association.NONE, (APPROVED_LABEL,))
    assert issue_has_standing(outsider, [labelled(actor_can_write=True)])


def test_issue_has_no_standing_when_the_approved_label_was_removed() -> None:
    assert not approved_by_writer(issue(Association.NONE), [labelled(actor_can_write=True)])


def test_issue_has_no_standing_when_latest_approval_is_by_an_outsider() -> None:
    events = [labelled(actor_can_write=True, minutes=0),
              labelled(actor_can_write=False, minutes=5)]
    assert not approved_by_writer(issue(Association.NONE, (APPROVED_LABEL,)), events)


def test_issue_has_no_standing_when_label_present_but_timeline_empty() -> None:
    assert not approved_by_writer(issue(Association.NONE, (APPROVED_LABEL,)), [])


def test_author_has_standing_when_owner() -> None:
    assert author_has_standing(issue(Association.OWNER))
