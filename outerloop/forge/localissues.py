"""The local forge's records: repositories, users, issues, comments and labels.

``LocalRecords`` is the half of ``LocalForge`` (``local.py``) that only touches the
SQLite file; ``local.py`` adds the git verbs and pull requests. Issues and pull
requests share one number sequence per repository, as on GitHub; a pull request is an
issue row plus a ``pulls`` row, so comments and labels work on both.

Users carry one forge-wide role (owner, member, collaborator, none) mapped to GitHub's
``author_association`` when a record is read; a login never registered is NONE and has
no write access. Protocol verbs act as ``self.login`` (the kernel); the ``*_as``
methods act as a named human. A missing repository or number raises ``NotFound``
naming the command that lists what exists.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import cast

from outerloop.clock import now as utc_now
from outerloop.clock import parse_stamp, stamp
from outerloop.config import REPO_RE
from outerloop.errors import ForgeError, NotFound
from outerloop.forge.base import Association, Comment, Issue, LabelEvent
from outerloop.forge.localdb import ROLES, WRITE_ROLES, Store

DEFAULT_HUMAN = "maintainer"
"""The login humans act as on the CLI unless they pass ``--as``; an owner of every
repository imported without naming another user."""

LOGIN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")
MAX_LABEL_CHARS = 50
ASSOCIATION = {
    "owner": Association.OWNER,
    "member": Association.MEMBER,
    "collaborator": Association.COLLABORATOR,
    "none": Association.NONE,
}
_ISSUE_SELECT = (
    "SELECT i.*, COALESCE(u.role, 'none') AS role FROM issues i "
    "LEFT JOIN users u ON u.login = i.author "
)


def check_login(login: str) -> str:
    """``login`` if it is a valid forge login (GitHub's rules), else ``ForgeError``."""
    if not LOGIN_RE.match(login):
        raise ForgeError(f"login {login!r} is not valid; fix: use letters, digits and "
                         f"single hyphens, at most 39 characters")
    return login


def check_repo_name(repo: str) -> tuple[str, str]:
    """``(owner, name)`` of ``repo``; refuses names that could escape the forge root."""
    if not re.match(REPO_RE, repo) or any(
        part.startswith((".", "-")) for part in repo.split("/")
    ):
        raise ForgeError(f"repository name {repo!r} is not valid; fix: use owner/name "
                         f"(letters, digits, '.', '_', '-'; not starting with '.' or '-')")
    owner, name = repo.split("/")
    return owner, name


class LocalRecords:
    """Records of the local forge at ``root``; see the module docstring."""

    def __init__(
        self, root: Path, login: str, *, clock: Callable[[], datetime] = utc_now
    ) -> None:
        self.root = Path(root)
        self.login = login
        self.root.mkdir(parents=True, exist_ok=True)
        self.store = Store(self.root / "forge.sqlite", clock)

    # ----- repositories and users

    def repo_dir(self, repo: str) -> Path:
        """Where ``repo``'s bare repository lives (whether or not it exists)."""
        owner, name = check_repo_name(repo)
        return self.root / owner / f"{name}.git"

    def _bare(self, repo: str) -> Path:
        path = self.repo_dir(repo)
        if not (path / "HEAD").is_file():
            raise NotFound(f"no repository {repo} on the local forge at {self.root}; "
                           f"fix: `outerloop forge repo import PATH --as {repo}`")
        return path

    def set_role(self, login: str, role: str) -> None:
        """Give ``login`` a forge-wide role (owner, member, collaborator or none)."""
        check_login(login)
        if role not in ROLES:
            raise ForgeError(f"role {role!r} is not one of {', '.join(ROLES)}; fix: pick "
                             f"one of them")
        with self.store.write() as conn:
            conn.execute("INSERT OR REPLACE INTO users (login, role) VALUES (?, ?)",
                         (login, role))

    def users(self) -> list[tuple[str, str]]:
        """``(login, role)`` of every registered user, sorted by login."""
        with self.store.read() as conn:
            rows = conn.execute("SELECT login, role FROM users ORDER BY login").fetchall()
        return [(r["login"], r["role"]) for r in rows]

    def role(self, login: str) -> str:
        """``login``'s role; ``none`` for a login never registered."""
        with self.store.read() as conn:
            return self._role(conn, login)

    def _role(self, conn: sqlite3.Connection, login: str) -> str:
        row = conn.execute("SELECT role FROM users WHERE login = ?", (login,)).fetchone()
        return str(row["role"]) if row else "none"

    def can_write(self, login: str) -> bool:
        """Whether ``login`` has write access (owner, member or collaborator)."""
        return self.role(login) in WRITE_ROLES

    # ----- issues, comments, labels

    def _issue_row(self, conn: sqlite3.Connection, repo: str, number: int) -> sqlite3.Row:
        row = conn.execute(_ISSUE_SELECT + "WHERE i.repo = ? AND i.number = ?",
                           (repo, number)).fetchone()
        if row is None:
            raise NotFound(f"{repo} has no issue or pull request #{number}; fix: "
                           f"`outerloop forge issue list --repo {repo}`")
        return cast(sqlite3.Row, row)

    def _labels(self, conn: sqlite3.Connection, repo: str, number: int) -> tuple[str, ...]:
        rows = conn.execute("SELECT label FROM labels WHERE repo = ? AND issue_number = ? "
                            "ORDER BY label", (repo, number)).fetchall()
        return tuple(r["label"] for r in rows)

    def _issue(self, conn: sqlite3.Connection, row: sqlite3.Row) -> Issue:
        return Issue(
            number=row["number"], title=row["title"], body=row["body"],
            author=row["author"], author_association=ASSOCIATION[row["role"]],
            state=row["state"], labels=self._labels(conn, row["repo"], row["number"]),
            created_at=parse_stamp(row["created_at"]), updated_at=parse_stamp(row["updated_at"]),
            is_pull_request=bool(row["is_pr"]),
        )

    def list_issues(self, repo: str, since: datetime | None = None) -> list[Issue]:
        """Open issues (not pull requests) updated after ``since``, oldest first."""
        self._bare(repo)
        after = stamp(since) if since else ""
        with self.store.read() as conn:
            rows = conn.execute(
                _ISSUE_SELECT + "WHERE i.repo = ? AND i.is_pr = 0 AND i.state = 'open' "
                "AND i.updated_at > ? ORDER BY i.created_at, i.number", (repo, after)
            ).fetchall()
            return [self._issue(conn, r) for r in rows]

    def get_issue(self, repo: str, number: int) -> Issue:
        """Issue ``number`` (a pull request reads as an issue with ``is_pull_request``)."""
        self._bare(repo)
        with self.store.read() as conn:
            return self._issue(conn, self._issue_row(conn, repo, number))

    def create_issue(self, repo: str, title: str, body: str) -> Issue:
        return self.open_issue_as(repo, title, body, self.login)

    def open_issue_as(self, repo: str, title: str, body: str, as_user: str) -> Issue:
        """Open an issue authored by ``as_user``; it takes the repo's next number."""
        self._bare(repo)
        check_login(as_user)
        if not title.strip():
            raise ForgeError("an issue needs a title; fix: pass --title")
        with self.store.write() as conn:
            number = self._insert_issue(conn, repo, title, body, as_user, is_pr=False)
        return self.get_issue(repo, number)

    def _insert_issue(
        self, conn: sqlite3.Connection, repo: str, title: str, body: str, author: str,
        *, is_pr: bool,
    ) -> int:
        now = self.store.stamp(conn)
        conn.execute("INSERT OR IGNORE INTO repos (name, created_at) VALUES (?, ?)",
                     (repo, now))
        number = int(conn.execute("SELECT next_number FROM repos WHERE name = ?",
                                  (repo,)).fetchone()[0])
        conn.execute("UPDATE repos SET next_number = ? WHERE name = ?", (number + 1, repo))
        conn.execute(
            "INSERT INTO issues (repo, number, title, body, author, state, is_pr, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?)",
            (repo, number, title, body, author, int(is_pr), now, now))
        return number

    def _set_state(self, repo: str, number: int, state: str, *, pr: bool | None) -> None:
        with self.store.write() as conn:
            row = self._issue_row(conn, repo, number)
            if pr is not None and bool(row["is_pr"]) != pr:
                kind = "a pull request" if row["is_pr"] else "an issue"
                raise ForgeError(f"{repo} #{number} is {kind}; fix: use the "
                                 f"`forge {'pr' if row['is_pr'] else 'issue'}` commands")
            if row["state"] == state:
                return
            conn.execute("UPDATE issues SET state = ?, updated_at = ? WHERE repo = ? AND "
                         "number = ?", (state, self.store.stamp(conn), repo, number))

    def close_issue(self, repo: str, number: int) -> None:
        self._bare(repo)
        self._set_state(repo, number, "closed", pr=False)

    def close_issue_as(self, repo: str, number: int, as_user: str) -> None:
        """Close an issue as ``as_user``: its author or someone with write access."""
        self._require_author_or_writer(repo, number, as_user)
        self._set_state(repo, number, "closed", pr=False)

    def edit_issue_as(self, repo: str, number: int, as_user: str, *, title: str | None = None,
                      body: str | None = None) -> Issue:
        """Change an issue's title and/or body as ``as_user`` (its author or a writer)."""
        self._require_author_or_writer(repo, number, as_user, verb="edit")
        with self.store.write() as conn:
            row = self._issue_row(conn, repo, number)
            if row["is_pr"]:
                raise ForgeError(f"{repo} #{number} is a pull request; fix: use the "
                                 f"`forge pr` commands")
            conn.execute("UPDATE issues SET title = ?, body = ?, updated_at = ? WHERE repo = ? "
                         "AND number = ?", (row["title"] if title is None else title,
                                            row["body"] if body is None else body,
                                            self.store.stamp(conn), repo, number))
        return self.get_issue(repo, number)

    def _require_author_or_writer(
        self, repo: str, number: int, as_user: str, verb: str = "close"
    ) -> None:
        issue = self.get_issue(repo, number)
        if issue.author.casefold() != as_user.casefold() and not self.can_write(as_user):
            raise ForgeError(f"{as_user} may not {verb} {repo} #{number}: not its author "
                             f"and no write access; fix: `outerloop forge user add "
                             f"{as_user} --role collaborator`")

    def _comment(self, row: sqlite3.Row) -> Comment:
        return Comment(
            id=row["id"], issue_number=row["issue_number"], author=row["author"],
            author_association=ASSOCIATION[row["role"]], body=row["body"],
            created_at=parse_stamp(row["created_at"]), updated_at=parse_stamp(row["updated_at"]),
        )

    def list_comments(
        self, repo: str, number: int, since: datetime | None = None
    ) -> list[Comment]:
        """Comments on issue or pull request ``number`` updated after ``since``, oldest
        first. ``NotFound`` for a number that does not exist."""
        self._bare(repo)
        after = stamp(since) if since else ""
        with self.store.read() as conn:
            self._issue_row(conn, repo, number)
            rows = conn.execute(
                "SELECT c.*, COALESCE(u.role, 'none') AS role FROM comments c LEFT JOIN "
                "users u ON u.login = c.author WHERE c.repo = ? AND c.issue_number = ? AND "
                "c.updated_at > ? ORDER BY c.id", (repo, number, after)).fetchall()
        return [self._comment(r) for r in rows]

    def post_comment(self, repo: str, number: int, body: str) -> Comment:
        return self.comment_as(repo, number, body, self.login)

    def comment_as(self, repo: str, number: int, body: str, as_user: str) -> Comment:
        """Comment on issue or pull request ``number`` as ``as_user``."""
        self._bare(repo)
        check_login(as_user)
        if not body.strip():
            raise ForgeError("a comment needs a body; fix: pass --body")
        with self.store.write() as conn:
            self._issue_row(conn, repo, number)
            now = self.store.stamp(conn)
            cursor = conn.execute(
                "INSERT INTO comments (repo, issue_number, author, body, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?)", (repo, number, as_user, body, now, now))
            conn.execute("UPDATE issues SET updated_at = ? WHERE repo = ? AND number = ?",
                         (now, repo, number))
            comment_id = cursor.lastrowid
            row = conn.execute(
                "SELECT c.*, COALESCE(u.role, 'none') AS role FROM comments c LEFT JOIN "
                "users u ON u.login = c.author WHERE c.id = ?", (comment_id,)).fetchone()
        return self._comment(row)

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> Comment:
        """Set the body of the kernel's comment ``comment_id`` on ``number`` (its
        ``updated_at`` moves, as on GitHub; the issue's does not)."""
        self._bare(repo)
        if not body.strip():
            raise ForgeError("a comment needs a body; fix: pass --body")
        with self.store.write() as conn:
            self._issue_row(conn, repo, number)
            found = conn.execute(
                "SELECT author FROM comments WHERE repo = ? AND issue_number = ? AND id = ?",
                (repo, number, comment_id)).fetchone()
            if found is None or found["author"] != self.login:
                raise NotFound(f"{repo}#{number} has no comment {comment_id} of "
                               f"{self.login}")
            conn.execute("UPDATE comments SET body = ?, updated_at = ? WHERE id = ?",
                         (body, self.store.stamp(conn), comment_id))
            row = conn.execute(
                "SELECT c.*, COALESCE(u.role, 'none') AS role FROM comments c LEFT JOIN "
                "users u ON u.login = c.author WHERE c.id = ?", (comment_id,)).fetchone()
        return self._comment(row)

    def label_as(self, repo: str, number: int, label: str, as_user: str) -> None:
        """Apply ``label`` as ``as_user``. Anyone may label here (the forge records who
        did, and ``label_events`` says whether they could write: that, not the label
        alone, is what the standing rule trusts). Re-applying a present label does
        nothing, as on GitHub."""
        self._bare(repo)
        check_login(as_user)
        if not label.strip() or len(label) > MAX_LABEL_CHARS or "\n" in label:
            raise ForgeError(f"label {label!r} is not valid; fix: use one line of at most "
                             f"{MAX_LABEL_CHARS} characters")
        with self.store.write() as conn:
            self._issue_row(conn, repo, number)
            added = conn.execute("INSERT OR IGNORE INTO labels (repo, issue_number, label) "
                                 "VALUES (?, ?, ?)", (repo, number, label)).rowcount
            if not added:
                return
            now = self.store.stamp(conn)
            conn.execute("INSERT INTO label_events (repo, issue_number, label, actor, "
                         "created_at) VALUES (?, ?, ?, ?, ?)",
                         (repo, number, label, as_user, now))
            conn.execute("UPDATE issues SET updated_at = ? WHERE repo = ? AND number = ?",
                         (now, repo, number))

    def label_events(self, repo: str, number: int) -> list[LabelEvent]:
        """The ``labeled`` timeline of ``number``, oldest first; ``actor_can_write`` is
        the actor's access now (as GitHub's permission lookup would answer)."""
        self._bare(repo)
        with self.store.read() as conn:
            self._issue_row(conn, repo, number)
            rows = conn.execute(
                "SELECT e.*, COALESCE(u.role, 'none') AS role FROM label_events e LEFT JOIN "
                "users u ON u.login = e.actor WHERE e.repo = ? AND e.issue_number = ? "
                "ORDER BY e.id", (repo, number)).fetchall()
        return [
            LabelEvent(label=r["label"], actor=r["actor"], actor_can_write=r["role"]
                       in WRITE_ROLES, created_at=parse_stamp(r["created_at"]))
            for r in rows
        ]
