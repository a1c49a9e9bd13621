"""The standing rule: whose words may steer the kernel.

An issue or comment steers the kernel only if its author's association is OWNER,
MEMBER or COLLABORATOR, or (issues only) it carries the ``outerloop:approved`` label
applied, per the issue's timeline, by someone with write access. Everything else is
data: it may be quoted (fenced) but never acted on.

The label path is deliberately narrow. A comment never inherits standing from its
issue's label (else anyone could steer an approved issue by commenting on it), and a
label counts only while present on the issue and only if its *latest* application was
by a writer (a writer's approval that was removed and re-applied by an outsider does
not count). Pure functions over forge records; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from outerloop.forge.base import APPROVED_LABEL, STANDING, Association, Issue, LabelEvent


class Associated(Protocol):
    """Any record with an author association (issue, comment, review, review comment)."""

    @property
    def author_association(self) -> Association: ...


def author_has_standing(record: Associated) -> bool:
    """Whether the record's author is OWNER, MEMBER or COLLABORATOR."""
    return record.author_association in STANDING


def approved_by_writer(issue: Issue, events: Sequence[LabelEvent]) -> bool:
    """Whether ``issue`` carries the approved label whose latest application (per its
    timeline ``events``) was by someone with write access. No event: not approved."""
    if APPROVED_LABEL not in issue.labels:
        return False
    applied = [e for e in events if e.label == APPROVED_LABEL]
    if not applied:
        return False
    latest = max(applied, key=lambda e: e.created_at)
    return latest.actor_can_write


def issue_has_standing(issue: Issue, events: Sequence[LabelEvent]) -> bool:
    """Whether ``issue`` may steer the kernel (author standing or writer approval)."""
    return author_has_standing(issue) or approved_by_writer(issue, events)
