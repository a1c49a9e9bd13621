"""The tick's commit protocol: what a tick's commit takes, the checks before it, the
heads it attests, the commit itself and the push.

Moved here from ``kernel/tick.py`` (issue 52): the tick asks its ``Book`` to commit and
is told what happened (``TickCommit``); how a commit is made safe is the ledger's own
business. In order, a commit:

1. names the files it takes (``pending.read``: those named since the last commit, the
   tick segments this tick's writers wrote, the heads segment it attests into), or
   takes everything (``git add -A``) when the list is lost;
2. stats a slice of the settled runs' files (``sweep.suspects``) and checks every file
   it takes that the fold did not read against its committed bytes
   (``integrity.unread_changes``): a file restored from git gets a warning line in its
   target's ledger, one that cannot be restored is kept out;
3. signs the heads of the files the tick read or wrote (``attest.attest``);
4. names the files once more (``pending.note``: a tick killed here heals next time),
   commits them (``gitrepo.commit``) and, with a ledger remote, pushes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.ledger import events as ev
from outerloop.ledger import gitrepo, segments, store, sweep
from outerloop.ledger.pending import note as note_for_commit
from outerloop.ledger.records import Head


class TickWriters:
    """One ``LedgerWriter`` per target's tick file, created on first use, each named
    for the next commit before its first line (a tick killed before its commit heals)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.writers: dict[str, store.LedgerWriter] = {}
        self.clock = store.LogicalClock()
        """Shared by every target's writer; observes each rebuild's ``State.clock``."""

    def __call__(self, target: str) -> store.LedgerWriter:
        if target not in self.writers:
            writer = store.LedgerWriter(store.tick_file(self.home, target), self.clock)
            note_for_commit(self.home / store.LEDGER_DIR, self.keys(target, writer))
            self.writers[target] = writer
        return self.writers[target]

    def keys(self, target: str, writer: store.LedgerWriter) -> list[str]:
        """The ledger keys of the tick segments ``writer`` wrote (or will write next):
        never a full segment it did not write (segment 1 of a long history is the
        series' name; hashing it again would cost what segments saved)."""
        folder = store.target_dir_name(target)
        return [f"{folder}/{path.name}"
                for path in dict.fromkeys([*writer.started, segments.live(writer.path)])]

    def written(self) -> list[str]:
        return [key for target, writer in self.writers.items()
                for key in self.keys(target, writer)]

    @property
    def appended(self) -> int:
        return sum(w.appended for w in self.writers.values())


@dataclass
class TickCommit:
    """What a tick's commit did, for its report and heartbeat."""

    sha: str | None = None
    commit_s: float | None = None
    """How long the commit took (None: none was made)."""
    git_check_s: float | None = None
    """How long the check of the committed files against git before it took."""
    notes: list[str] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)
    """Files found changed under the commit (restored or kept out), one line each."""
    repaired: list[str] = field(default_factory=list)
    """What the commit mended in a ledger repository a machine crash broke."""


@dataclass(frozen=True)
class CommitPlan:
    """What the tick hands its commit: the heads it read, the files it must leave out,
    the targets' folders by repo, and the commit's own settings."""

    heads: dict[str, Head]
    frozen: frozenset[str]
    repos: Mapping[str, str]
    """Target folder (``owner__name``) -> repo, for warnings written into its ledger."""
    fresh: int
    stale_lock_s: float
    remote: str | None


def commit_tick(home: Path, writers: TickWriters, plan: CommitPlan) -> TickCommit:
    """Commit what this tick wrote and read (the steps in the module's docstring)."""
    out = TickCommit()
    heads = dict(plan.heads)
    for repo, writer in writers.writers.items():  # a tick file (or segment) this tick
        for path in dict.fromkeys([*writer.started, writer.path]):
            start = segments.start_link(path)
            heads.setdefault(f"{store.target_dir_name(repo)}/{path.name}",
                             Head(0, 0, start.value, start.chained, False))
    changed: set[str] = set()
    checking = time.monotonic()
    named = _commit_takes(home, heads, writers)
    swept = {} if named is None else sweep.suspects(home)
    kept_out = _unread_changes(home, heads, writers, plan, out, changed,
                               None if named is None else named | set(swept))
    whole = {key: at for key, at in swept.items() if key not in kept_out}
    changed.update(whole)  # restored, or lines appended: the commit takes them
    sweep.seen(home, whole)
    out.git_check_s = time.monotonic() - checking

    def check_everything() -> list[str]:  # the commit takes every file after all
        return _unread_changes(home, heads, writers, plan, out, set(), None)
    _attest(home, heads, plan.frozen, out)
    note_for_commit(home / store.LEDGER_DIR, [*writers.written(), *sorted(changed)])
    committing = time.monotonic()
    committed = gitrepo.commit(home, writers.appended + plan.fresh,
                               stale_lock_s=plan.stale_lock_s,
                               keep_out=sorted(plan.frozen) + kept_out, remote=plan.remote,
                               check_everything=None if named is None else check_everything)
    out.commit_s = time.monotonic() - committing
    out.sha = committed.sha
    out.notes.extend(committed.notes)
    out.repaired = committed.repaired
    return out


def push_if_behind(home: Path, remote: str | None) -> str | None:
    """Push the ledger to ``remote`` when it holds unpushed commits (also one a remote
    refused before: tried again each tick); a problem, or None."""
    if remote and gitrepo.unpushed(home):
        return gitrepo.push(home, remote)
    return None


def _commit_takes(home: Path, heads: dict[str, Head], writers: TickWriters) -> set[str] | None:
    """The files this tick's commit takes (``ledger/pending.py``): those named since the
    last commit, the tick segments its writers wrote and the heads segment it attests
    into, per target (and the suspects of ``ledger/sweep.py``, added by the caller);
    None when it takes every file (``git add -A``)."""
    from outerloop.ledger import attest, pending

    ledger = home / store.LEDGER_DIR
    named = pending.read(ledger)
    if named is None:
        return None
    folders = {key.split("/", 1)[0] for key in heads} | {
        key.split("/", 1)[0] for key in writers.written()}
    attested = {f"{folder}/{segments.live(ledger / folder / attest.HEADS_FILE).name}"
                for folder in folders}
    return named | set(writers.written()) | attested


def _unread_changes(home: Path, heads: dict[str, Head], writers: TickWriters,
                    plan: CommitPlan, out: TickCommit, changed: set[str],
                    named: set[str] | None) -> list[str]:
    """TickCommit ledger files the fold did not read (settled runs' files, heads) that
    changed: restored from git (a warning in the target's ledger), else kept out of the
    commit. Returns the files kept out. ``named``: the files the commit takes, the only
    ones looked at (``_commit_takes``); None: every committed file, and ``changed`` gets
    each that differs from ``HEAD`` (for the commit to take)."""
    from outerloop.ledger import integrity
    from outerloop.ledger.rebuild import is_ledger_key

    found = integrity.unread_changes(home, home / store.LEDGER_DIR,
                                     {key for key, head in heads.items() if head.read},
                                     is_ledger_key, plan.frozen, changed, named)
    kept_out = []
    for damage in found:
        out.damage.append(damage.line(frozen=False))
        if not damage.restored:
            kept_out.append(damage.file)
        elif damage.target_dir in plan.repos:
            writers(plan.repos[damage.target_dir]).append(ev.Note(
                level="warning", text=damage.line(frozen=False)))
    return kept_out


def _attest(home: Path, heads: dict[str, Head], frozen: frozenset[str], out: TickCommit) -> None:
    """Sign the heads of the files this tick read or wrote, before they are committed
    (``ledger/attest.py``); a tick that cannot still commits, and says why."""
    from outerloop.errors import ConfigError
    from outerloop.ledger import attest

    try:
        attest.attest(home, heads, skip=frozen)
    except (OSError, ConfigError) as exc:
        out.notes.append(f"ledger heads not attested this tick ({exc}); the next "
                         f"commit attests them")
