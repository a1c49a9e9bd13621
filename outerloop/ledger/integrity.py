"""Committed ledger lines never vanish silently: find a damaged file, restore it from git.

Ledger files only ever grow: writers append, nothing in the kernel rewrites, truncates
or replaces one. So a file that is shorter than what the fold has read, whose bytes
before that point changed (its hash chain up to there no longer the one read), that is
not a regular file or that vanished, was damaged from outside (a kernel write that
followed an agent's symlink, a hand edit, a bad restore). Folding it as it is would
make the kernel forget what it did (runs, claims, posts) and do it again. A file under
another inode is not damaged for that (a restored or copied home): it is the same
file when its chain holds up to the last line read (``state._suspect`` walks it).

The check is cheap because the fold already stats every file it reads
(``ledger/rebuild.py``): a file whose size and mtime match its mark is not looked at; a
changed one costs one read of at most ``TAIL_BYTES`` before the mark's offset, compared
with the digest kept in the mark (``tail_digest``). A cold fold (no cache) compares
every file's size with the one ``HEAD`` records (one ``git ls-tree``).

A damaged file is restored from the ledger's git history (``restore``): the newest
committed version that agrees with the mark (holds at least the bytes the fold read,
ending with the same tail), plus the lines of the damaged file that continue its
``seq`` (a writer's appends since, if any). The damaged file is kept under
``<home>/ledger-damaged/<time>/`` for the operator. When no committed version agrees
(no git history, the file never committed, git broken) the file is left as it is and
its target is **frozen**: the tick acts on nothing of that target and does not commit
the file until it is whole again (``docs/operate.md``).

The hash chain (``ledger/chain.py``) adds what a size and a tail cannot show: a line
that does not chain (edited, deleted, inserted, moved) is damage too. A committed
version is fit to restore only when its own chain holds and it ends, at the fold's
offset, on the link the fold kept, so an edit that was committed too is passed over.
A changed file whose read part is small (or whose size did not move) has its whole
chain walked again (``chain_problem``). Files the fold no longer reads (settled runs'
files, the heads) are checked when a commit takes them (``unread_changes``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from outerloop.atomic import fsync_dir
from outerloop.clock import now, stamp_seconds
from outerloop.ledger import chain, segments
from outerloop.ledger.decode import decode_lines

TAIL_BYTES = 4096
"""How much before a mark's offset is digested: enough that a replaced or rewritten
file cannot match by chance, little enough to read on every change."""
HISTORY_DEPTH = 50
"""Commits of one file searched back for a version that agrees with the fold's mark."""
DAMAGED_DIR = "ledger-damaged"
GIT_TIMEOUT_S = 60


def tail_digest(data_or_path: bytes | str, offset: int) -> bytes:
    """Digest of the (at most ``TAIL_BYTES``) bytes before ``offset``; of a file's bytes
    when given a path (b"" when it is shorter, or cannot be read)."""
    start = max(0, offset - TAIL_BYTES)
    if isinstance(data_or_path, bytes):
        chunk = data_or_path[start:offset]
    else:
        try:
            fd = os.open(data_or_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return b""
        try:
            chunk = os.pread(fd, offset - start, start)
        finally:
            os.close(fd)
    if len(chunk) != offset - start:
        return b""
    return hashlib.blake2b(chunk, digest_size=16).digest()


@dataclass(frozen=True)
class Expected:
    """What the fold knew of a file: it read ``offset`` bytes, ending with ``tail``,
    its hash chain standing at ``link`` there ("" when not known)."""

    offset: int
    tail: bytes
    link: str = ""


WALK_CHUNK = 1 << 22
"""``chain_problem`` reads a file this much at a time: a full segment 1 of an old ledger
(gigabytes) walked again costs a chunk of memory, not the file."""


def chain_problem(path: str, offset: int, link: str) -> str | None:
    """What breaks the hash chain of the file's first ``offset`` bytes, or its link
    there differing from ``link`` (the fold's); None when it holds. Read and walked
    ``WALK_CHUNK`` at a time."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return f"the file cannot be read back to offset {offset}"
    end = segments.start_link(path)
    try:
        if os.fstat(fd).st_size < offset:
            return f"the file cannot be read back to offset {offset}"
        at, carry, first = 0, b"", 1
        while at < offset:
            chunk = os.pread(fd, min(WALK_CHUNK, offset - at), at)
            if not chunk:
                return f"the file cannot be read back to offset {offset}"
            at += len(chunk)
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            lines = chain.split(data[:cut])
            breaks = chain.follow(end, lines, first)
            if breaks:
                return breaks[0].what
            first += len(lines)
            carry = data[cut:]
    finally:
        os.close(fd)
    if end.value != link:
        return (f"the last line the fold had read (before offset {offset}) changed since "
                f"it was read")
    return None


def _agrees(blob: bytes, expected: Expected | None, start: chain.Link) -> bool:
    """A committed version fit to restore: its chain holds (from ``start``: the segment
    before it, ``ledger/segments.py``), and it holds what the fold read (``expected``):
    as many bytes, the same tail, the same link there."""
    if expected is None:
        return not chain.walk(blob, chain.Link(start.value, start.chained))[1]
    if len(blob) < expected.offset or tail_digest(blob, expected.offset) != expected.tail:
        return False
    link, breaks = chain.walk(blob[:expected.offset], chain.Link(start.value, start.chained))
    if breaks or (expected.link and link.value != expected.link):
        return False
    return not chain.follow(link, chain.split(blob[expected.offset:]), 1)


@dataclass(frozen=True)
class Damage:
    """One damaged ledger file and what became of it."""

    file: str
    """Under ``ledger/`` (``owner__name/tick.jsonl``, ``owner__name/runs/<run>.jsonl``)."""
    what: str
    """What is wrong, in words."""
    restored: bool
    """Restored from git (the fold goes on); False: its target is frozen."""
    detail: str = ""
    """How it was restored (the commit, what was kept), or why it could not be."""

    @property
    def target_dir(self) -> str:
        return self.file.split("/", 1)[0]

    def line(self, *, frozen: bool = True) -> str:
        """What happened, in one line; ``frozen=False``: the file is only kept out of
        the ledger's commits (a file the fold no longer reads: its target acts on)."""
        head = (f"LEDGER DAMAGED ledger/{self.file}: {self.what}; ")
        if self.restored:
            return head + f"restored from the ledger's git history ({self.detail})"
        if not frozen:
            return head + (f"NOT restored ({self.detail}); kept out of the ledger's "
                           f"commits until it is whole (see docs/operate.md, 'A damaged "
                           f"ledger')")
        return head + (f"NOT restored ({self.detail}); target {self.target_dir} is frozen: "
                       f"nothing of it is acted on until the file is whole (see "
                       f"docs/operate.md, 'A damaged ledger')")


def blob_sizes(ls_tree: bytes) -> dict[str, int]:
    """``path -> size`` of every blob in ``git ls-tree -r -l -z`` output."""
    sizes = {}
    for entry in ls_tree.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 4 and parts[1] == "blob" and parts[3].isdigit():
            sizes[path] = int(parts[3])
    return sizes


def _git(ledger: Path, *args: str) -> tuple[int, bytes, bytes]:
    """``(returncode, stdout, stderr)``; (-1, b"", why) when git cannot run or times
    out. The git dir is named: a home inside another repository never reads that one's
    history. ``subprocess`` is imported here: the lanes load the fold, never an effector."""
    import subprocess

    from outerloop import child_wait

    try:
        done = child_wait.run(["git", f"--git-dir={ledger / '.git'}", "-c",
                               "core.hooksPath=/dev/null", *args], cwd=ledger,
                              capture_output=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, b"", str(exc).encode()
    return done.returncode, done.stdout, done.stderr


def committed_sizes(ledger: Path) -> dict[str, int] | None:
    """``file -> size`` of every file in the ledger's ``HEAD`` (None: no commit, no git)."""
    code, out, _ = _git(ledger, "ls-tree", "-r", "-l", "-z", "HEAD")
    if code != 0:
        return None
    return blob_sizes(out)


def _versions(ledger: Path, key: str) -> tuple[list[str], str]:
    """The commits that changed ``key``, newest first (and git's words if it failed)."""
    code, out, err = _git(ledger, "log", f"-n{HISTORY_DEPTH}", "--format=%H", "--", key)
    if code != 0:
        said = " ".join(err.decode("utf-8", "replace").split())[:300]
        return [], f"git log failed: {said}"
    return out.decode().split(), ""


def committed_blob(ledger: Path, key: str) -> bytes | None:
    """``key``'s bytes in the ledger's ``HEAD`` (None: not committed, no commit, no git)."""
    return _blob(ledger, "HEAD", key)


def committed_names(ledger: Path, folder: str) -> list[str]:
    """The names of the files directly in ``folder`` in the ledger's ``HEAD`` (empty: no
    commit, no git, or nothing there)."""
    code, out, _ = _git(ledger, "ls-tree", "-z", "--name-only", "HEAD", f"{folder}/")
    if code != 0:
        return []
    return [name.rsplit("/", 1)[-1]
            for name in out.decode("utf-8", "surrogateescape").split("\0") if name]


def _blob(ledger: Path, commit: str, key: str) -> bytes | None:
    code, out, _ = _git(ledger, "cat-file", "blob", f"{commit}:{key}")
    return out if code == 0 else None


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _last_seq(data: bytes) -> int:
    lines = [line for line in data[: data.rfind(b"\n") + 1].split(b"\n") if line.strip()]
    for line in reversed(lines):
        events, _ = decode_lines([line])
        if events:
            return int(events[0].seq)
    return 0


def _continuing(data: bytes, good: bytes) -> bytes:
    """The damaged file's lines that continue ``good`` (a writer's appends since the
    damage): their ``seq`` run on from its last with no gap and their hash chain from
    its last line. When ``data`` starts with ``good``, the lines after it up to the
    first that does not continue; else its last lines that do, to its end; else b""."""
    after_seq = _last_seq(good)
    link, _ = chain.walk(good)
    if data.startswith(good):
        kept = []
        for line in chain.split(data[len(good):]):
            events, bad = decode_lines([line])
            if bad or not events or int(events[0].seq) != after_seq + 1 or \
                    chain.follow(link, [line], 1):
                break
            kept.append(line)
            after_seq += 1
        return b"".join(x + b"\n" for x in kept)
    lines = [line for line in chain.split(data) if line.strip()]
    tail: list[bytes] = []
    for line in reversed(lines):
        events, bad = decode_lines([line])
        if bad or not events:
            return b""
        tail.append(line)
        seq = int(events[0].seq)
        if seq == after_seq + 1:
            ordered = tail[::-1]
            seqs = [int(decode_lines([x])[0][0].seq) for x in ordered]
            if seqs != list(range(after_seq + 1, after_seq + 1 + len(seqs))) or \
                    chain.follow(link, ordered, 1):
                return b""
            return b"".join(x + b"\n" for x in ordered)
        if seq <= after_seq:
            return b""
    return b""


def restore(home: Path, ledger: Path, key: str, what: str,
            expected: Expected | None) -> Damage:
    """Restore ``ledger/<key>`` from git: the newest committed version that agrees with
    ``expected`` (any committed version when None is known), then the damaged file's
    lines that continue it. The damaged bytes are kept under ``ledger-damaged/``."""
    versions, problem = _versions(ledger, key)
    good: bytes | None = None
    commit = ""
    start = segments.start_link(ledger / key)
    for commit in versions:
        blob = _blob(ledger, commit, key)
        if blob is None:
            continue
        if not _agrees(blob, expected, start):
            continue
        good = blob
        break
    if good is None:
        why = problem or ("no committed version holds what the fold had read"
                          if versions else "the ledger's git history has no version of it")
        return Damage(key, what, False, why)
    path = ledger / key
    damaged = _read(path) or b""
    kept = _continuing(damaged, good)
    whole = damaged[: damaged.rfind(b"\n") + 1]  # a torn last line is not judged here
    if whole == good + kept and expected is not None and len(good) >= expected.offset:
        return Damage(key, what, True, f"its bytes agree with commit {commit[:12]}; kept")
    keep_dir = home / DAMAGED_DIR / stamp_seconds(now()).replace(":", "")
    copy = keep_dir / key
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(damaged)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.restore")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(good + kept)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)  # the restored file, not the damaged one, after a crash
    lines = kept.count(b"\n")
    return Damage(key, what, True,
                  f"{len(good)} bytes from commit {commit[:12]}"
                  + (f" and {lines} later lines kept" if lines else "")
                  + f"; the damaged file is kept as {copy}")


def unread_changes(home: Path, ledger: Path, read: set[str],
                   is_ledger_file: Callable[[str], bool],
                   skip: frozenset[str] = frozenset(),
                   changed: set[str] | None = None,
                   named: Iterable[str] | None = None) -> list[Damage]:
    """Before a commit: the committed ledger files changed since ``HEAD`` that this
    tick's fold did not read (``read``): a settled run's file (never read again), a
    target's ``heads.jsonl``. Each must be its committed bytes plus lines that chain
    from them (a run job's append racing the commit; for heads, lines signed with the
    key: ``ledger/attest.py``); any other change is restored from git (or, when it
    cannot be, reported: the caller keeps the file out of the commit). ``skip``: target
    directories already frozen.

    ``named``: the files the commit takes (``ledger/pending.py``, the tick's writers,
    the heads it attests), the only ones looked at: one ``git cat-file --batch-check``
    for their committed sizes and ids, and each file's committed part hashed (not
    held in memory) against its id, so the check costs what changed, not history.
    A file not named is not committed, so git keeps its committed bytes whatever
    happened to it. None: the commit takes everything (``git add -A``), so every
    committed file is looked at (one ``git diff``: a stat of each); ``changed`` (when
    given) then gets every file it lists outside ``skip``, for the commit to take."""
    if named is None:
        code, out, _ = _git(ledger, "diff", "--name-only", "-z", "--no-renames", "HEAD", "--")
        if code != 0:
            return []  # no commit yet, or git broken: the commit itself reports it
        keys = [key for key in out.decode("utf-8", "surrogateescape").split("\0") if key]
        if changed is not None:
            changed.update(key for key in keys if key.split("/", 1)[0] not in skip)
    else:
        keys = sorted(set(named))
    from outerloop.ledger import attest

    wanted = [key for key in keys if key not in read and key.split("/", 1)[0] not in skip
              and "\n" not in key
              and (segments.of_series(key, attest.HEADS_FILE) or is_ledger_file(key))]
    committed = _committed_ids(ledger, wanted)
    found = []
    for key in wanted:
        entry = committed.get(key)
        if entry is None:
            continue  # not committed yet (or no commit, git broken: the commit says so)
        what = _unlike_committed(home, ledger, key, *entry)
        if what is None:
            continue
        blob = _blob(ledger, "HEAD", key) or b""
        end = chain.walk(blob)[0].value
        found.append(restore(home, ledger, key, what,
                             Expected(len(blob), tail_digest(blob, len(blob)), end)))
    return found


def _committed_ids(ledger: Path, keys: list[str]) -> dict[str, tuple[str, int]]:
    """``key -> (blob id, size)`` in ``HEAD`` of those of ``keys`` it holds (one ``git
    cat-file --batch-check``; {} when there is no commit or git cannot run)."""
    if not keys:
        return {}
    import subprocess

    from outerloop import child_wait

    try:
        done = child_wait.run(
            ["git", f"--git-dir={ledger / '.git'}", "-c", "core.hooksPath=/dev/null",
             "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
            cwd=ledger, input="".join(f"HEAD:{key}\n" for key in keys).encode(
                "utf-8", "surrogateescape"),
            capture_output=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    found = {}
    for key, said in zip(keys, done.stdout.decode().splitlines(), strict=False):
        parts = said.split()
        if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
            found[key] = (parts[0], int(parts[2]))
    return found


HASH_CHUNK = 1 << 20
_CHAINED = re.compile(rb',"prev":"[0-9a-f]{%d}"\}\n' % chain.PREV_HEX)


def _unlike_committed(home: Path, ledger: Path, key: str, blob_id: str, size: int
                      ) -> str | None:
    """How ``ledger/<key>`` is not its committed blob (``blob_id``, ``size`` bytes) with
    lines appended that chain from it (and, for a heads file, are signed); None when it
    is. The committed part is hashed as it is read, never held whole (a full segment 1
    of an old ledger is gigabytes); a file that differs is compared with the blob."""
    from outerloop.ledger import attest

    path = ledger / key
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = -1
    if fd < 0:
        return _unlike(_blob(ledger, "HEAD", key) or b"", None)
    try:
        now = os.fstat(fd).st_size
        if now < size:
            return f"the file shrank to {now} bytes ({size} committed)"
        digest = hashlib.sha1(b"blob %d\0" % size)
        lines, chained, at, carry = 0, False, 0, b""
        while at < size:
            chunk = os.pread(fd, min(HASH_CHUNK, size - at), at)
            if not chunk:
                break
            digest.update(chunk)
            lines += chunk.count(b"\n")
            chained = chained or bool(_CHAINED.search(carry + chunk))
            carry = chunk[-(chain.PREV_HEX + 12):]
            at += len(chunk)
        whole = size == 0 or os.pread(fd, 1, size - 1) == b"\n"
        if at != size or digest.hexdigest() != blob_id or not whole:
            return _unlike(_blob(ledger, "HEAD", key) or b"", _read(path))
        last = chain.last_line(fd, size)
        appended = chain.split(os.pread(fd, now - size, size)) if now > size else []
    finally:
        os.close(fd)
    if not appended:
        return None
    link = chain.Link(chain.GENESIS if last is None else chain.line_hash(last), chained)
    if chain.follow(link, appended, 1):
        return "lines appended since the commit do not chain from it"
    if not segments.of_series(key, attest.HEADS_FILE):
        return None
    what = attest.unsigned(home, key, appended)
    breaks = attest.chain_breaks(appended, last, lines + 1)
    if what is None and breaks:
        what = f"appended attestations do not chain from the committed ones: {breaks[0][1]}"
    return what


def _unlike(blob: bytes, data: bytes | None) -> str | None:
    """How ``data`` (the file now) is not ``blob`` (committed) with lines appended that
    chain from it; None when it is."""
    if data is None:
        return f"the file is gone ({len(blob)} bytes committed)"
    if len(data) < len(blob):
        return f"the file shrank to {len(data)} bytes ({len(blob)} committed)"
    if not data.startswith(blob):
        same = next((i for i, (a, b) in enumerate(zip(blob, data, strict=False)) if a != b),
                    len(blob))
        line = blob[:same].count(b"\n") + 1
        return f"committed line {line} changed (edited, deleted or moved)"
    link, _ = chain.walk(blob)
    more = chain.follow(link, chain.split(data[len(blob):]), 1)
    return None if not more else "lines appended since the commit do not chain from it"
