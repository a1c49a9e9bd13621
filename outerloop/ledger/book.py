"""A home's book: the ledger's one door for what is done to it (issue 52).

Code outside ``ledger/`` imports four modules of it and no other (a test counts them,
``tests/unit/test_ledger_door.py``):

- ``ledger.events``: what is written (the typed events);
- ``ledger.state``: what the fold holds (``State`` and its records);
- ``ledger.history``: what is asked of settled runs (``History``, the tally's rows, a
  result's standing, the named selections);
- ``ledger.book`` (this module): opening a home's book, its state, its writers, its
  commit, its verification and the files' names.

Everything else under ``ledger/`` (the store, the chain, the fold and its cache, the
settled runs' keeping, the git repository, attestation, integrity) is the ledger's own:
changed without a caller outside knowing. Rare, heavy operations (verify, catching up
with a remote, making a home's repository) import their module only when called, so a
quiet tick imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from outerloop.ledger.cites import cut as cut
from outerloop.ledger.cites import whole as whole
from outerloop.ledger.cites import with_findings as with_findings
from outerloop.ledger.decode import decode_lines as decode_lines
from outerloop.ledger.fold import apply_event as apply_event
from outerloop.ledger.fold import order_of as order_of
from outerloop.ledger.rebuild import LedgerDamaged as LedgerDamaged
from outerloop.ledger.rebuild import is_ledger_key as is_ledger_key
from outerloop.ledger.rebuild import is_tick_file as is_tick_file
from outerloop.ledger.rebuild import rebuild as rebuild
from outerloop.ledger.rebuild import run_files as run_files
from outerloop.ledger.state import State
from outerloop.ledger.store import ARCHIVE_DIR as ARCHIVE_DIR
from outerloop.ledger.store import LEDGER_DIR as LEDGER_DIR
from outerloop.ledger.store import RUNS_DIR as RUNS_DIR
from outerloop.ledger.store import TICK_FILE as TICK_FILE
from outerloop.ledger.store import LedgerWriter as LedgerWriter
from outerloop.ledger.store import LogicalClock as LogicalClock
from outerloop.ledger.store import archive_file as archive_file
from outerloop.ledger.store import read_lines as read_lines
from outerloop.ledger.store import run_file as run_file
from outerloop.ledger.store import target_dir_name as target_dir_name
from outerloop.ledger.store import tick_file as tick_file
from outerloop.ledger.store import tick_files as tick_files

if TYPE_CHECKING:
    from outerloop.ledger.commit import TickCommit, TickWriters
    from outerloop.ledger.records import Head
    from outerloop.ledger.verify import Report as VerifyReport

__all__ = ["ARCHIVE_DIR", "LEDGER_DIR", "RUNS_DIR", "TICK_FILE", "Book",
           "LedgerDamaged", "LedgerWriter", "LogicalClock", "apply_event", "archive_file",
           "blob_sizes", "cut", "decode_lines", "init_repo", "is_ledger_key",
           "is_tick_file", "order_of", "push_refused", "read_lines", "rebuild", "run_file",
           "run_files", "target_dir_name", "tick_file", "tick_files", "verify_home", "whole",
           "with_findings"]


class Book:
    """A tick's hold on its home's ledger: the state it folds (``read``), the writers of
    its targets' tick files (``writers``), and its one commit (``commit``). Every state
    it reads adds the files' heads the commit attests and moves the writers' logical
    clock past what was folded."""

    def __init__(self, home: Path) -> None:
        from outerloop.ledger.commit import TickWriters

        self.home = home
        self._writers: TickWriters = TickWriters(home)
        self._heads: dict[str, Head] = {}

    def read(self) -> State:
        """The home's state, folded from what changed since the cache (``rebuild``);
        files that changed under the cache are restored from git (a tick's read; a
        view's ``rebuild`` leaves them)."""
        state = rebuild(self.home, heal=True)
        self._heads.update(state.heads)
        self._writers.clock.observe(state.clock)
        return state

    @property
    def writers(self) -> Callable[[str], LedgerWriter]:
        """The writer of a target's tick file, by target (made on first use)."""
        return self._writers

    @property
    def appended(self) -> int:
        """Lines this book's writers appended."""
        return self._writers.appended

    def needs_commit(self, state: State) -> bool:
        """A commit is due: lines were appended, the fold found lines others wrote, an
        earlier commit is still owed, or a target is frozen."""
        from outerloop.ledger.gitrepo import has_backlog

        return bool(self.appended or state.fresh or state.frozen or has_backlog(self.home))

    def commit(self, state: State, *, repos: dict[str, str], frozen: Iterable[str],
               stale_lock_s: float, remote: str | None) -> TickCommit:
        """Commit what this book wrote and read (``ledger/commit.py``). ``repos``: target
        folder -> repo; ``frozen``: target folders left out."""
        from outerloop.ledger.commit import CommitPlan, commit_tick

        return commit_tick(self.home, self._writers, CommitPlan(
            heads=self._heads, frozen=frozenset(frozen) | frozenset(state.frozen),
            repos=repos, fresh=state.fresh, stale_lock_s=stale_lock_s, remote=remote))

    def push(self, remote: str | None) -> str | None:
        """Push unpushed commits to ``remote`` (also one refused before); a problem."""
        from outerloop.ledger.commit import push_if_behind

        return push_if_behind(self.home, remote)

    def catch_up(self, remote: str) -> str | None:
        """A restored ledger takes its lost lines back from its remote first."""
        from outerloop.ledger.catchup import catch_up as take_back

        return take_back(self.home, remote)


def verify_home(home: Path) -> VerifyReport:
    """Walk every ledger file, its chain and its attested heads (``outerloop verify``)."""
    from outerloop.ledger.verify import verify_home as walk

    return walk(home)


def init_repo(home: Path) -> None:
    """Make the home's ledger repository and its signing key (``outerloop init``)."""
    from outerloop.ledger import attest, gitrepo

    gitrepo.init_repo(home)
    attest.ensure_key(home)  # the ledger's head attestations (ledger/attest.py)


def push_refused(home: Path) -> tuple[str, str] | None:
    """Why the ledger's remote refused its last push, if it did (``doctor``)."""
    from outerloop.ledger.gitrepo import push_refused as refused

    return refused(home)


def blob_sizes(ls_tree: bytes) -> dict[str, int]:
    """``path -> size`` of every blob in ``git ls-tree -r -l -z`` output."""
    from outerloop.ledger.integrity import blob_sizes as sizes

    return sizes(ls_tree)
