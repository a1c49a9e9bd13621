"""``outerloop verify``: every ledger file's hash chain and attested head, checked whole.

For each target directory under ``ledger/``: its ``heads.jsonl`` and its later segments
(each line's MAC under the home's key, each line's signed ``prev`` naming the line
before it, across segments: ``attest.chain_breaks``; and every attestation the
ledger's git ``HEAD`` holds still there, as committed), then every ledger file
(``tick.jsonl`` and its later segments, ``runs/*.jsonl``, ``archive/*.jsonl``) walked
from its first line (a later segment's from the last line of the one before:
``ledger/segments.py``), each segment named on its own: each link
(``ledger/chain.py``), and the line its latest head names. A problem names the file,
the line and what it looks like (the lines' ``seq`` tell a deleted line from a moved or
edited one): ``edited``, ``deleted``, ``reordered``, ``inserted``, ``truncated``,
``gone``, ``head`` (the attested line is not the one there), ``heads`` (an attestation
edited, moved or forged), ``key``.

What passes: lines after a file's latest head (written since the tick's last commit)
and files not attested yet, if they chain; lines written before the hash chain (a file's
chain starts where it starts); a torn line a crash left, which the next writer chained
over. They are counted in the report's notes.
"""

from __future__ import annotations

import hmac
import json
import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path

from outerloop.errors import ConfigError
from outerloop.ledger import attest, chain, integrity, segments
from outerloop.ledger.store import ARCHIVE_DIR, LEDGER_DIR, RUNS_DIR, TICK_FILE

CHUNK_BYTES = 4 << 20


@dataclass(frozen=True)
class Problem:
    file: str
    """Under ``ledger/``."""
    line: int
    """1-based; 0 for the file as a whole."""
    kind: str
    what: str

    def text(self) -> str:
        where = f"ledger/{self.file}" + (f":{self.line}" if self.line else "")
        return f"{where}: {self.kind}: {self.what}"


@dataclass
class Report:
    files: int = 0
    lines: int = 0
    chained: int = 0
    """Lines that carry ``prev``."""
    attested: int = 0
    """Files with a head."""
    after_heads: int = 0
    """Lines after their file's latest head (or in a file with none yet)."""
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    index_rows: int = 0
    """Rows of the history index checked against the ledger (``ledger/index_check.py``)."""
    index: list[str] = field(default_factory=list)
    """Where the history index and the ledger disagree: the index's fault, not the
    ledger's (it is derived), so not a problem: ``ok`` holds."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        said = (f"{self.files:,} ledger files, {self.lines:,} lines ({self.chained:,} "
                f"chained), {self.attested:,} files attested, {self.after_heads:,} lines "
                f"written since their file's head")
        if self.index:
            said += (f"; the history index disagrees with the ledger on {len(self.index)} "
                     f"runs (derived: remove cache/history.sqlite3 and the next tick makes "
                     f"it again)")
        elif self.index_rows:
            said += f"; the history index's {self.index_rows:,} settled runs match the ledger"
        if self.ok:
            return f"verified: {said}"
        return f"NOT verified: {len(self.problems)} problems; {said}"

    def as_json(self) -> dict[str, object]:
        return {"ok": self.ok, "files": self.files, "lines": self.lines,
                "chained": self.chained, "attested": self.attested,
                "after_heads": self.after_heads,
                "problems": [asdict(p) for p in self.problems], "notes": self.notes,
                "index_rows": self.index_rows, "index": self.index}


@dataclass(frozen=True)
class _Head:
    lines: int
    link: str
    at: str


def verify_home(home: Path) -> Report:
    """Check every ledger file of ``home`` (see the module's doc)."""
    report = Report()
    ledger = home / LEDGER_DIR
    try:
        key = attest.load_key(home)
    except ConfigError as exc:
        report.problems.append(Problem(attest.KEY_FILE, 0, "key", str(exc)))
        key = None
    if not ledger.is_dir():
        report.notes.append(f"{ledger} does not exist: nothing to verify")
        return report
    for target in sorted(ledger.iterdir()):
        if target.is_dir() and not target.name.startswith("."):
            _verify_target(target, key, report)
    from outerloop.ledger.index_check import check_index

    report.index_rows, report.index = check_index(home)
    return report


def _files(target: Path) -> list[str]:
    found = segments.series(target, TICK_FILE)
    for folder in (RUNS_DIR, ARCHIVE_DIR):
        try:
            names = os.listdir(target / folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        found += sorted(f"{folder}/{name}" for name in names if name.endswith(".jsonl"))
    return found


def _verify_target(target: Path, key: bytes | None, report: Report) -> None:
    heads = _read_heads(target, key, report)
    files = _files(target)
    for rel in files:
        _verify_file(target, rel, heads.get(rel), report)
    for rel in sorted(set(heads) - set(files)):
        head = heads[rel]
        report.problems.append(Problem(f"{target.name}/{rel}", 0, "gone", (
            f"the file is gone; its head attested {head.lines} lines at {head.at}")))


def _read_heads(target: Path, key: bytes | None, report: Report) -> dict[str, _Head]:
    """The latest head of each file, from the target's ``heads.jsonl`` and its later
    segments (``ledger/segments.py``), in order: each segment's chain starts from the
    last line of the one before."""
    heads: dict[str, _Head] = {}
    found: list[Problem] = []
    before: bytes | None = None
    names = segments.series(target, attest.HEADS_FILE)
    for rel in names:
        before = _read_heads_segment(target, rel, key, report, heads, found, before)
    if not found:
        for rel in _committed_heads_series(target, names):
            found += _committed_heads(target, rel)
    report.problems += sorted(found, key=lambda p: (p.file, p.line))
    return heads


def _read_heads_segment(target: Path, rel: str, key: bytes | None, report: Report,
                        heads: dict[str, _Head], found: list[Problem],
                        before: bytes | None) -> bytes | None:
    """Read one heads segment into ``heads``, its problems into ``found``; its last line
    (the next segment's chain starts there), or ``before`` when it has none."""
    name = f"{target.name}/{rel}"
    try:
        data = (target / rel).read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return before
    lines = chain.split(data)
    found += [Problem(name, number, "heads", what)
              for number, what in attest.chain_breaks(lines, before)]
    if key is None and lines:
        report.problems.append(Problem(attest.KEY_FILE, 0, "key", (
            f"the attestation key is missing, so the heads in ledger/{name} cannot be "
            f"checked; fix: restore {attest.KEY_FILE} from the home's backup")))
    for number, line in enumerate(lines, 1):
        parts = attest.split_mac(line)
        if parts is None:
            _torn_or(report, name, number, line, "heads", "the attestation carries no MAC")
            continue
        body, said = parts
        if key is not None and not hmac.compare_digest(attest.mac(key, target.name, body),
                                                       said):
            found.append(Problem(name, number, "heads", (
                "its MAC does not match: the attestation was edited, copied from another "
                "target or signed with another key")))
            continue
        try:
            value = json.loads(body)
            for file, (count, link) in value["files"].items():
                heads[file] = _Head(int(count), str(link), str(value["at"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            found.append(Problem(name, number, "heads", "the attestation does not read as one"))
    return lines[-1] if lines else before


def _committed_heads_series(target: Path, names: list[str]) -> list[str]:
    """The heads segments on disk and those the ledger's git ``HEAD`` holds, in order (a
    committed segment deleted from disk is still compared)."""
    committed = integrity.committed_names(target.parent, target.name)
    return segments.listed(sorted(set(names) | set(committed)), attest.HEADS_FILE)


def _committed_heads(target: Path, rel: str) -> list[Problem]:
    """A heads segment against its version in the ledger's git ``HEAD``: the committed
    attestations must all be there, as committed. Catches what the heads' own chain
    cannot: the newest lines cut off (what is left still chains). None to compare
    (no git, no commit, the segment never committed): nothing said."""
    key = f"{target.name}/{rel}"
    blob = integrity.committed_blob(target.parent, key)
    try:
        data = (target / rel).read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        data = b""
    if blob is None or data.startswith(blob):
        return []
    committed, now = chain.split(blob), chain.split(data)
    number = next((n for n, (a, b) in enumerate(zip(committed, now, strict=False), 1)
                   if a != b), len(now) + 1)
    if number > len(now):
        return [Problem(key, number, "truncated", (
            f"the heads file ends after line {len(now)}; the ledger's git HEAD holds "
            f"{len(committed)} attestations (the newest cut off)"))]
    return [Problem(key, number, "heads", (
        f"line {number} is not the attestation the ledger's git HEAD holds there"))]


def _torn_or(report: Report, name: str, number: int, line: bytes, kind: str,
             what: str) -> None:
    try:
        json.loads(line)
    except ValueError:
        report.notes.append(f"ledger/{name}:{number}: a torn line (a crash), chained over")
        return
    report.problems.append(Problem(name, number, kind, what))


def _verify_file(target: Path, rel: str, head: _Head | None, report: Report) -> None:
    name = f"{target.name}/{rel}"
    path = target / rel
    report.files += 1
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        report.problems.append(Problem(name, 0, "gone", "not a regular file (a link?)"))
        return
    walk = _Walk(name, head.lines if head else 0, segments.start_link(path))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        rest = b""
        while chunk := handle.read(CHUNK_BYTES):
            data = rest + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            walk.feed(data[:cut].split(b"\n"))
            rest = data[cut + 1:]
    report.lines += walk.count
    report.chained += walk.chained
    report.problems += _moves(path, walk.problems, walk.gaps)
    if rest:
        report.notes.append(f"ledger/{name}: ends with a torn line ({len(rest)} bytes) no "
                            f"writer has terminated yet")
    if head is None:
        report.after_heads += walk.count
        return
    report.attested += 1
    report.after_heads += max(0, walk.count - head.lines)
    if walk.count < head.lines:
        report.problems.append(Problem(name, walk.count + 1, "truncated", (
            f"the file ends after line {walk.count}; its head attested {head.lines} lines "
            f"at {head.at}")))
    elif walk.at_head != head.link:
        report.problems.append(Problem(name, head.lines, "head", (
            f"line {head.lines} is not the line attested at {head.at} (edited, or the "
            f"file was rewritten up to it)")))


class _Walk:
    """One file's lines, in order: its chain, classified breaks, the link at its head."""

    def __init__(self, name: str, head_lines: int, start: chain.Link) -> None:
        self.name = name
        self.head_lines = head_lines
        self.link = start
        self.count = 0
        self.chained = 0
        self.at_head = chain.GENESIS if head_lines == 0 else ""
        self.last = b""
        self.problems: list[Problem] = []
        self.gaps: dict[int, list[int]] = {}
        """Line -> the seq numbers missing before it (``deleted``)."""

    def feed(self, lines: list[bytes]) -> None:
        cut = self.head_lines - self.count
        if 0 < cut <= len(lines):
            self._follow(lines[:cut])
            self.at_head = self.link.value
            self._follow(lines[cut:])
        else:
            self._follow(lines)

    def _follow(self, lines: list[bytes]) -> None:
        if not lines:
            return
        first = self.count + 1
        breaks = chain.follow(self.link, lines, first, all_breaks=True)
        self.chained += sum(1 for line in lines if chain.prev_of(line) is not None)
        for broken in breaks:
            index = broken.line - first
            before = lines[index - 1] if index > 0 else self.last
            self._classify(broken, lines[index], before if broken.line > 1 else None)
        self.count += len(lines)
        self.last = lines[-1]

    def _classify(self, broken: chain.Break, line: bytes, before: bytes | None) -> None:
        number = broken.line
        seq, seq_before = _seq(line), _seq(before) if before is not None else 0
        at, kind = number, "edited"
        if chain.prev_of(line) is None:
            kind, what = "inserted", broken.what
        elif before is None:
            kind, what = "deleted", (f"line 1 does not start the chain: the file's first "
                                     f"lines were deleted (it starts at seq {seq})")
        elif seq_before is None:
            at, what = number - 1, f"line {number - 1} no longer reads as an event"
        elif seq is None:
            what = f"line {number} no longer reads as an event"
        elif seq < seq_before:
            kind, what = "reordered", (f"line {number} (seq {seq}) comes after line "
                                       f"{number - 1} (seq {seq_before})")
        elif seq > seq_before + 1:
            missing = (f"seq {seq_before + 1} is" if seq == seq_before + 2 else
                       f"seq {seq_before + 1}..{seq - 1} are")
            kind, what = "deleted", f"{missing} missing before line {number}"
            self.gaps[number] = list(range(seq_before + 1, seq))
        else:
            at, what = number - 1, (f"line {number - 1} changed after line {number} was "
                                    f"written (its hash is no longer the prev line "
                                    f"{number} names)")
        self.problems.append(Problem(self.name, at, kind, what))


def _moves(path: Path, problems: list[Problem], gaps: dict[int, list[int]]
           ) -> list[Problem]:
    """``deleted`` problems whose missing lines are in the file after all, elsewhere:
    moved lines (``reordered``). Reads the file's ``seq`` numbers again, only then."""
    if not gaps:
        return problems
    with path.open("rb") as handle:
        present = {seq for line in handle if (seq := _seq(line)) is not None}
    out = []
    for problem in problems:
        missing = gaps.get(problem.line) if problem.kind == "deleted" else None
        if missing and all(seq in present for seq in missing):
            shown = f"seq {missing[0]}" + (f"..{missing[-1]}" if len(missing) > 1 else "")
            problem = Problem(problem.file, problem.line, "reordered", (
                f"{shown}, which belongs before line {problem.line}, is elsewhere in the "
                f"file (moved)"))
        out.append(problem)
    return out


def _seq(line: bytes) -> int | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    seq = value.get("seq") if isinstance(value, dict) else None
    return seq if isinstance(seq, int) else None
