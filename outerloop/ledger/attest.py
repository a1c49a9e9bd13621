"""Head attestations: the tick signs where each ledger file's hash chain stands.

The hash chain (``ledger/chain.py``) shows a line edited, deleted or moved, but anyone
who can write the file can recompute every link after the change. So at each commit
the tick attests each file it read or wrote: its line count and its last line's hash,
under an HMAC-SHA256 key only the kernel reads (``KEY_FILE``, 0600 in ``keys/``, which
no sandboxed session, launch or eval can see). A rewritten history then no longer
matches its attested head, unless the key was used to sign it again.

Where: ``ledger/<owner>__<name>/heads.jsonl``, one per target, written only by the tick
(one writer, like every ledger file) and committed with the ledger; kept as segments
like the tick's file (``heads.000002.jsonl``..., ``ledger/segments.py``), read in
order. Each line holds
the heads of the files that changed since the line before, at most
``FILES_PER_LINE``; a file's latest head is the one that counts::

    {"at": "...", "files": {"tick.jsonl": [312, "<link>"], "runs/<id>.jsonl": [...]},
     "prev": "<hash of the line before>", "mac": "<HMAC of the line before it>"}

The lines chain like ledger lines (``prev``), and each one's MAC covers the target's
directory name and the line up to its ``prev``: a heads line edited, dropped or moved
(or copied from another target) fails. The ``prev`` sits inside what the MAC signs, not
last on the line (``chain.follow`` reads a line's last field), so the heads' chain is
walked by ``chain_breaks`` here: a signed line that does not name the line before it
(a line deleted, moved, cut short, or an old one replayed) is a break. What the chain
cannot show: the newest heads lines cut off (what is left still chains), alone or
together with the ledger lines they attest (a rollback to an earlier, whole state);
``verify`` compares the heads with the ledger's git ``HEAD`` for it, and the git
history and its remote hold what came after.

Run jobs do not attest their own files: the key stays with one process kind (the
tick), and a run's lines are attested by the next tick that folds them, after checking
their chain.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable
from pathlib import Path

from outerloop.atomic import fsync_dir, make_dirs, write_atomic
from outerloop.clock import now_stamp
from outerloop.ledger import chain, pending, segments
from outerloop.ledger.records import Head
from outerloop.ledger.store import LEDGER_DIR, write_whole
from outerloop.private_files import ensure_random_key, read_key

KEY_FILE = "keys/ledger-hmac.key"
HEADS_FILE = "heads.jsonl"
FILES_PER_LINE = 500
LAST_FILE = "cache/attested.json"
"""The heads the tick's last attestation computed: a file read again unchanged since
(the tick's own lines, folded by the next tick) is not attested twice, so the tick
after a busy one commits nothing new. Derived, like all of ``cache/``."""
_MAC_HEAD = b',"mac":"'
_MAC_LEN = len(_MAC_HEAD) + 64 + 2


def key_path(home: Path) -> Path:
    return home / KEY_FILE


def load_key(home: Path) -> bytes | None:
    """The attestation key (None: none made yet). A key file others may read, or not
    owned by us, is refused (``ConfigError``), as every key is."""
    path = key_path(home)
    if not path.exists():
        return None
    return read_key(path).encode("ascii")


def ensure_key(home: Path) -> bytes:
    """The attestation key, made (32 random bytes, hex, 0600) when there is none."""
    return ensure_random_key(key_path(home)).encode("ascii")


def mac(key: bytes, target_dir: str, body: bytes) -> str:
    """The MAC of a heads line's ``body`` (the line up to and with its ``prev``)."""
    return hmac.new(key, target_dir.encode() + b"\n" + body, hashlib.sha256).hexdigest()


def signed(key: bytes, target_dir: str, body: bytes) -> bytes:
    return body[:-1] + _MAC_HEAD + mac(key, target_dir, body).encode() + b'"}'


def split_mac(line: bytes) -> tuple[bytes, str] | None:
    """``(body, mac)`` of a heads line (None: it carries no MAC)."""
    if len(line) <= _MAC_LEN or not line.endswith(b'"}'):
        return None
    cut = len(line) - _MAC_LEN
    if line[cut:cut + len(_MAC_HEAD)] != _MAC_HEAD:
        return None
    return line[:cut] + b"}", line[cut + len(_MAC_HEAD):-2].decode("ascii", "replace")


def chain_breaks(lines: list[bytes], before: bytes | None = None, first: int = 1,
                 ) -> list[tuple[int, str]]:
    """``(line, what)`` for each heads line of ``lines`` (the file's lines ``first``,
    ``first + 1``...; ``before``: the line before them, None at the file's start) whose
    signed ``prev`` is not the hash of the line before it. A line that carries no MAC
    (a torn line a crash left, chained over by the next append) links on unchecked:
    the line after it names its hash."""
    at = {chain.line_hash(line): n for n, line in enumerate(lines, first)}
    link = chain.GENESIS if before is None else chain.line_hash(before)
    torn_before = False
    found = []
    for number, line in enumerate(lines, first):
        parts = split_mac(line)
        named = chain.prev_of(parts[0]) if parts is not None else None
        if parts is not None and named != link:
            found.append(_break(number, named, at, torn_before))
        torn_before = parts is None
        link = chain.line_hash(line)
    return found


def _break(number: int, named: str | None, at: dict[str, int], torn_before: bool,
           ) -> tuple[int, str]:
    if number == 1:
        return 1, ("line 1 does not start the heads' chain: attestations before it were "
                   "deleted")
    if torn_before:
        return number - 1, (f"line {number - 1} was cut short: it is not the attestation "
                            f"line {number} names as the one before it")
    other = at.get(named or "")
    if other is not None:
        return number, (f"line {number} names line {other} as the attestation before it, "
                        f"not line {number - 1}: attestations moved, or an old one replayed")
    return number, (f"line {number} names an attestation before it that the file no "
                    f"longer holds: line {number - 1} or lines before it were deleted or "
                    f"edited")


def unsigned(home: Path, key: str, lines: list[bytes]) -> str | None:
    """Why some of ``lines`` (appended to the heads file ``key``, ``owner__name/
    heads.jsonl``) are not attestations this home's key signed; None when all are."""
    secret = load_key(home)
    target_dir = key.split("/", 1)[0]
    for number, line in enumerate(lines, 1):
        parts = split_mac(line)
        if secret is None or parts is None or not hmac.compare_digest(
                mac(secret, target_dir, parts[0]), parts[1]):
            return f"appended attestation {number} is not signed with this home's key"
    return None


def _extend(ledger: Path, key: str, head: Head) -> tuple[int, str] | None:
    """``(lines, link)`` of ``key`` now: the fold's ``head`` moved on over the complete
    lines written since (if they chain; else where the fold left it). None: nothing
    new and the fold did not read it."""
    try:
        fd = os.open(ledger / key, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, max(0, size - head.offset), head.offset)
    finally:
        os.close(fd)
    lines = chain.split(data)
    link = chain.Link(head.link, head.chained)
    if lines and not chain.follow(link, lines, head.lines + 1):
        return head.lines + len(lines), link.value
    return (head.lines, head.link) if head.read else None


def attest(home: Path, heads: dict[str, Head], skip: Iterable[str] = ()) -> int:
    """Append, per target, the heads of the files in ``heads`` (a rebuild's) that it
    read or that grew since: each file's line count and last line's hash, signed.
    ``skip``: target directories left out (frozen). Returns the files attested."""
    ledger = home / LEDGER_DIR
    left_out = set(skip)
    before = _load_last(home)
    last: dict[str, tuple[int, str]] = {}
    by_dir: dict[str, dict[str, tuple[int, str]]] = {}
    for key, head in sorted(heads.items()):
        target_dir, _, rel = key.partition("/")
        if target_dir in left_out or not (ledger / target_dir).is_dir():
            continue
        now = _extend(ledger, key, head)
        if now is None or now[0] == 0:
            continue
        last[key] = now
        if before.get(key) != now:
            by_dir.setdefault(target_dir, {})[rel] = now
    if not by_dir:
        return 0
    secret = ensure_key(home)
    at = now_stamp()
    for target_dir, files in by_dir.items():
        names = sorted(files)
        live = segments.live(ledger / target_dir / HEADS_FILE)
        for start in range(0, len(names), FILES_PER_LINE):
            part = {name: list(files[name]) for name in names[start:start + FILES_PER_LINE]}
            body = json.dumps({"at": at, "files": part}, separators=(",", ":")).encode()
            live = segments.append_path(live)
            pending.note(ledger, [f"{target_dir}/{live.name}"])  # for the next commit
            _append(live, secret, target_dir, body)
    make_dirs((home / LAST_FILE).parent)
    write_atomic(home / LAST_FILE, json.dumps(last).encode())
    return sum(len(files) for files in by_dir.values())


def _load_last(home: Path) -> dict[str, tuple[int, str]]:
    """The heads the last attestation computed (``LAST_FILE``; {} when unknown)."""
    try:
        value = json.loads((home / LAST_FILE).read_bytes())
        return {str(k): (int(v[0]), str(v[1])) for k, v in value.items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}


def _append(path: Path, secret: bytes, target_dir: str, body: bytes) -> None:
    """One signed line, chained from the file's last line; whole and fsynced."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        size = os.fstat(fd).st_size
        last = chain.last_line(fd, size)
        prev = segments.start_link(path).value if last is None else chain.line_hash(last)
        data = signed(secret, target_dir, chain.with_prev(body, prev)) + b"\n"
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        write_whole(fd, data, size)
    finally:
        os.close(fd)
    if size == 0:
        fsync_dir(path.parent)
