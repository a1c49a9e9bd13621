"""The local forge's records: one SQLite file (``forge.sqlite``) shared by processes.

Why SQLite in WAL mode: the tick, run jobs and a human at the CLI may touch the forge
at once. Every write runs in one ``BEGIN IMMEDIATE`` transaction (the writer lock is
taken up front, so no write is lost or half-applied); readers see a consistent
snapshot. A busy database is waited on for ``BUSY_TIMEOUT_S``, then the call raises
``ForgeUnavailable`` (defer, conclude nothing).

Why ``synchronous=FULL``: with WAL, ``NORMAL`` leaves a commit in the page cache until
the next checkpoint, so a power loss can take back a comment or a PR the kernel has
already recorded ``done`` (the ledger's line is fsynced) and the kernel would never
make it again. ``FULL`` fsyncs the WAL on every commit (``bench/durability.py`` prints
what that costs).

Timestamps are UTC, stored as fixed-width ISO-8601 text with microseconds, and strictly
increasing across the whole database (each write takes ``max(now, last + 1 µs)``), so
text order is time order and a caller that remembers the newest ``updated_at`` it saw
and asks ``since`` that value misses nothing and sees nothing twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from outerloop.clock import parse_stamp, stamp
from outerloop.clock import unshifted_now as utc_now
from outerloop.config import durable
from outerloop.errors import ForgeUnavailable

BUSY_TIMEOUT_S = 30
SCHEMA_VERSION = 1
ROLES = ("owner", "member", "collaborator", "none")
WRITE_ROLES = frozenset({"owner", "member", "collaborator"})

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS repos (
    name TEXT PRIMARY KEY COLLATE NOCASE,
    next_number INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
    login TEXT PRIMARY KEY COLLATE NOCASE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'member', 'collaborator', 'none'))
);
CREATE TABLE IF NOT EXISTS issues (
    repo TEXT NOT NULL COLLATE NOCASE,
    number INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    author TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    is_pr INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (repo, number)
);
CREATE TABLE IF NOT EXISTS pulls (
    repo TEXT NOT NULL COLLATE NOCASE,
    number INTEGER NOT NULL,
    head TEXT NOT NULL,
    base TEXT NOT NULL,
    head_sha TEXT NOT NULL,
    merged INTEGER NOT NULL DEFAULT 0,
    merge_sha TEXT,
    draft INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (repo, number)
);
CREATE INDEX IF NOT EXISTS pulls_head ON pulls (repo, head);
CREATE TABLE IF NOT EXISTS comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo TEXT NOT NULL COLLATE NOCASE,
    issue_number INTEGER NOT NULL,
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS comments_issue ON comments (repo, issue_number);
CREATE TABLE IF NOT EXISTS reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo TEXT NOT NULL COLLATE NOCASE,
    pr_number INTEGER NOT NULL,
    author TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('APPROVED', 'CHANGES_REQUESTED', 'COMMENTED')),
    body TEXT NOT NULL,
    submitted_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS review_comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo TEXT NOT NULL COLLATE NOCASE,
    pr_number INTEGER NOT NULL,
    author TEXT NOT NULL,
    path TEXT NOT NULL,
    line INTEGER,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS labels (
    repo TEXT NOT NULL COLLATE NOCASE,
    issue_number INTEGER NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (repo, issue_number, label)
);
CREATE TABLE IF NOT EXISTS label_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo TEXT NOT NULL COLLATE NOCASE,
    issue_number INTEGER NOT NULL,
    label TEXT NOT NULL,
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""


class Store:
    """Connections, transactions and the strictly increasing clock over one file."""

    def __init__(self, path: Path, clock: Callable[[], datetime] = utc_now) -> None:
        self.path = path
        self.clock = clock
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = self._connect()
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(
                "BEGIN IMMEDIATE;" + SCHEMA + "INSERT OR IGNORE INTO meta (key, value) "
                f"VALUES ('schema', '{SCHEMA_VERSION}'); COMMIT;"
            )
        except sqlite3.Error as exc:
            raise ForgeUnavailable(f"local forge database {self.path}: {exc}; "
                                   f"retry later") from None
        finally:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA synchronous=FULL" if durable() else "PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise ForgeUnavailable(f"local forge database {self.path}: {exc}") from None
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One all-or-nothing write transaction, holding the writer lock throughout."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            raise ForgeUnavailable(f"local forge database {self.path}: {exc}; "
                                   f"retry later") from None
        finally:
            conn.close()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent snapshot."""
        conn = self._connect()
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            raise ForgeUnavailable(f"local forge database {self.path}: {exc}; "
                                   f"retry later") from None
        finally:
            conn.close()

    def stamp(self, conn: sqlite3.Connection) -> str:
        """The next timestamp: now, or 1 µs past the last one handed out if the clock
        has not moved on (call inside ``write``)."""
        now = self.clock()
        row = conn.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()
        if row is not None:
            floor = parse_stamp(row["value"]) + timedelta(microseconds=1)
            now = max(now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC), floor)
        text = stamp(now)
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('clock', ?)", (text,))
        return text
