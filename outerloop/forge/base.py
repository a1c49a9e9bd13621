"""The forge seam: records shaped like GitHub's and the ``Forge`` protocol.

Every lane works against these records only, so the local forge and GitHub are
interchangeable. ``author_association`` carries GitHub's vocabulary (OWNER, MEMBER,
COLLABORATOR, CONTRIBUTOR, NONE); the local forge maps its users' roles onto it.
Repositories are named ``owner/name``.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field


class Association(StrEnum):
    OWNER = "OWNER"
    MEMBER = "MEMBER"
    COLLABORATOR = "COLLABORATOR"
    CONTRIBUTOR = "CONTRIBUTOR"
    NONE = "NONE"


STANDING = frozenset({Association.OWNER, Association.MEMBER, Association.COLLABORATOR})
CLOSING_RE = re.compile(
    r"(?<![\w-])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+#(\d+)\b", re.IGNORECASE)
"""GitHub's closing keywords: a pull request merged into the default branch closes the
issues its body names so (``Closes #12``, ``fixes: #3``)."""


def closing_refs(body: str) -> list[int]:
    """The issue numbers a pull request's body closes on merge, in order, once each."""
    return list(dict.fromkeys(int(n) for n in CLOSING_RE.findall(body)))
APPROVED_LABEL = "outerloop:approved"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Issue(_Record):
    number: int
    title: str
    body: str
    author: str
    author_association: Association
    state: str = Field(description="open | closed")
    labels: tuple[str, ...] = ()
    created_at: datetime
    updated_at: datetime
    is_pull_request: bool = False


class Comment(_Record):
    id: int
    issue_number: int
    author: str
    author_association: Association
    body: str
    created_at: datetime
    updated_at: datetime


class PullRequest(_Record):
    number: int
    title: str
    body: str
    author: str
    head: str = Field(description="head branch name")
    head_sha: str
    base: str
    state: str = Field(description="open | closed")
    merged: bool = False
    draft: bool = False
    created_at: datetime
    updated_at: datetime


class Review(_Record):
    id: int
    pr_number: int
    author: str
    author_association: Association
    state: str = Field(description="APPROVED | CHANGES_REQUESTED | COMMENTED")
    body: str
    submitted_at: datetime


class ReviewComment(_Record):
    id: int
    pr_number: int
    author: str
    author_association: Association
    path: str
    line: int | None
    body: str
    created_at: datetime


class LabelEvent(_Record):
    """One ``labeled`` entry of an issue's timeline: who applied which label."""

    label: str
    actor: str
    actor_can_write: bool
    created_at: datetime


class Forge(Protocol):
    """A code host. Non-idempotent calls (comments, PRs, issues) are made safe by the
    caller's marker or head-branch lookup, never by blind retries."""

    login: str
    """The kernel's own login: the only author whose markers count."""

    # repositories and git
    def default_branch(self, repo: str) -> str: ...
    def branch_head(self, repo: str, branch: str) -> str | None: ...
    def read_file(self, repo: str, path: str, ref: str) -> bytes | None: ...
    def fetch(self, repo: str, dest: Path, ref: str) -> str:
        """Make ``dest`` a clone (or update it) holding ``ref``; return its sha."""
        ...

    def push(self, repo: str, source: Path, sha: str, branch: str) -> None:
        """Move ``branch`` to ``sha`` (taken from the local repo ``source``);
        fast-forward only: a branch holding commits not in ``sha`` is refused."""
        ...

    def commit_files(
        self, repo: str, branch: str, files: dict[str, bytes], message: str,
        expected_head: str | None,
    ) -> str:
        """One commit on ``branch`` writing ``files``; refused (``ForgeError``) if the
        branch head is not ``expected_head`` (None: the branch must not exist)."""
        ...

    # issues and comments
    def list_issues(self, repo: str, since: datetime | None = None) -> list[Issue]:
        """Open issues (not pull requests), oldest first."""
        ...

    def get_issue(self, repo: str, number: int) -> Issue: ...
    def create_issue(self, repo: str, title: str, body: str) -> Issue: ...
    def close_issue(self, repo: str, number: int) -> None: ...
    def list_comments(
        self, repo: str, number: int, since: datetime | None = None
    ) -> list[Comment]: ...
    def post_comment(self, repo: str, number: int, body: str) -> Comment: ...
    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> Comment:
        """Set the body of comment ``comment_id`` on ``number`` (setting the same body
        again changes nothing: safe to retry)."""
        ...
    def label_events(self, repo: str, number: int) -> list[LabelEvent]: ...

    # pull requests
    def open_pr(
        self, repo: str, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> PullRequest: ...
    def update_pr(
        self, repo: str, number: int, title: str | None = None, body: str | None = None
    ) -> PullRequest: ...
    def get_pr(self, repo: str, number: int) -> PullRequest: ...
    def find_open_pr(self, repo: str, head: str) -> PullRequest | None: ...
    def find_prs(self, repo: str, head: str) -> list[PullRequest]:
        """Every pull request from branch ``head`` in any state (open, closed, merged),
        oldest first: what a ledger restored from a backup looks up before it opens one
        again (``kernel/executor.py``, ``find``)."""
        ...

    def close_pr(self, repo: str, number: int) -> None:
        """Close a pull request unmerged (nothing when it is closed already)."""
        ...

    def list_reviews(self, repo: str, number: int) -> list[Review]: ...
    def list_review_comments(
        self, repo: str, number: int, since: datetime | None = None
    ) -> list[ReviewComment]: ...
