"""Pack a run's files into one tarball with a manifest, and unpack it verified.

What a run leaves on disk: ``runs/<run>/`` (job logs under ``jobs/``, prompts, legs,
transcripts in the session home, the report) and, with local compute, the job records
``jobs/<id>/`` of its jobs. One gzip tarball keeps the upload to two objects however
many small files a run wrote; the manifest lists every regular file with its size and
SHA-256, so a restore proves each byte came back.

Every file is scanned for the kernel's known secret values (``sandbox.secrets``) and
packed *redacted* (each value replaced by ``[REDACTED]``; the manifest marks the file
``"redacted": true`` and hashes what was packed). Refusing instead would let an agent
keep its run out of the archive by echoing its own model key. A value hidden inside a
compressed or encoded file the agent wrote is beyond a byte scan.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from outerloop.archive.rclone import ArchiveError, ArchiveMismatch
from outerloop.archive.spec import MANIFEST_FILE, TARBALL_SUFFIX
from outerloop.run.paths import RUNS_DIR
from outerloop.sandbox import beneath
from outerloop.text import redact

LOCAL_JOBS_DIR = "jobs"
CHUNK = 1024 * 1024
REDACTED = b"[REDACTED]"


@dataclass(frozen=True)
class Packed:
    tarball: Path
    manifest: Path
    files: int
    bytes: int
    sources: tuple[Path, ...]
    redacted: tuple[str, ...] = ()
    """Home-relative paths of the files packed with secret values replaced."""


class _Hashing:
    """A reader that hashes what ``tarfile`` copies out of it."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.sha = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.sha.update(data)
        return data


def local_job_dirs(home: Path, run_id: str) -> list[Path]:
    """Local compute's records of the run's jobs (``jobs/<id>/spec.json`` names the run
    in its environment), except the archive's own jobs."""
    root = home / LOCAL_JOBS_DIR
    if not root.is_dir():
        return []
    found = []
    for spec_file in root.glob("*/spec.json"):
        try:
            spec = json.loads(spec_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        name = str(spec.get("name", ""))
        env = spec.get("env") or {}
        if env.get("OUTERLOOP_RUN") == run_id and f"{run_id}-archive-" not in name:
            found.append(spec_file.parent)
    return sorted(found)


def run_sources(home: Path, run_id: str) -> list[Path]:
    run_dir = home / RUNS_DIR / run_id
    return ([run_dir] if run_dir.is_dir() else []) + local_job_dirs(home, run_id)


def _walk(root: Path) -> Iterator[str]:
    """Root (``""``) and every path under it, relative to it, reached through
    descriptors: the run's tree holds the agent's files, and a symlink it swapped in
    is recorded as a link, never followed (``sandbox/beneath``)."""
    yield ""
    for rel, _ in beneath.walk_files(root):
        yield rel


def _holds(handle: IO[bytes], needles: list[bytes]) -> bool:
    """Whether the file holds any of ``needles``, read in chunks (a value split across
    two chunks is still seen: each chunk is read with the tail of the one before)."""
    keep = max(len(n) for n in needles) - 1
    tail = b""
    handle.seek(0)
    while chunk := handle.read(CHUNK):
        window = tail + chunk
        if any(n in window for n in needles):
            return True
        tail = window[-keep:] if keep else b""
    return False


def _redacted_copy(handle: IO[bytes], needles: list[bytes], out: Path) -> None:
    """The open file copied to ``out`` with every needle replaced, chunk by chunk; bytes
    that could begin a needle wait for the next chunk before they are written."""
    keep = max(len(n) for n in needles) - 1
    pending = b""
    handle.seek(0)
    with out.open("wb") as sink:
        while chunk := handle.read(CHUNK):
            pending += chunk
            for needle in needles:
                pending = pending.replace(needle, REDACTED)
            cut = max(0, len(pending) - keep)
            sink.write(pending[:cut])
            pending = pending[cut:]
        sink.write(pending)


def _add(tar: tarfile.TarFile, source: Path, rel: str, name: str, needles: list[bytes],
         clean_copy: Path) -> dict[str, Any] | None:
    """Add one entry; a regular file's manifest entry, None for anything else. A regular
    file is opened once, through ``beneath`` (never through a link), and that
    descriptor is scanned, copied redacted, or packed."""
    path = source / rel if rel else source
    if not rel or not stat.S_ISREG(os.lstat(path).st_mode):
        info = tar.gettarinfo(str(path), arcname=name)
        if info is not None and not info.isreg():  # a socket is None: nothing to keep
            tar.addfile(info)
        return None
    with beneath.open_read(source, rel, links_ok=True) as handle:
        info = tar.gettarinfo(arcname=name, fileobj=handle)
        entry: dict[str, Any] = {"path": info.name}
        if needles and _holds(handle, needles):
            _redacted_copy(handle, needles, clean_copy)
            entry["redacted"] = True
            with clean_copy.open("rb") as clean:
                info.size = os.fstat(clean.fileno()).st_size
                reader = _Hashing(clean)
                tar.addfile(info, reader)
        else:
            handle.seek(0)
            reader = _Hashing(handle)
            tar.addfile(info, reader)
    return {**entry, "size": info.size, "sha256": reader.sha.hexdigest()}


def pack(home: Path, run_id: str, target: str, staging: Path,
         secrets: Sequence[str] = ()) -> Packed:
    """Write ``<run>.tar.gz`` and ``manifest.json`` into ``staging`` (emptied first),
    every file redacted of ``secrets`` (see the module doc)."""
    sources = run_sources(home, run_id)
    if not sources:
        raise ArchiveError(f"run {run_id} has no files under {home / RUNS_DIR}; nothing to "
                           f"archive")
    if staging.exists():
        remove_tree(staging)
    staging.mkdir(parents=True)
    tarball = staging / f"{run_id}{TARBALL_SUFFIX}"
    needles = sorted({s.encode() for s in secrets if len(s) > 3}, key=len, reverse=True)
    clean_copy = staging / ".redacted"
    entries: list[dict[str, Any]] = []
    redacted: list[str] = []
    total = 0
    with tarfile.open(tarball, "w:gz", compresslevel=6) as tar:
        for source in sources:
            for rel in _walk(source):
                path = source / rel if rel else source
                name = redact(str(path.relative_to(home)), secrets)  # a name can hold one too
                try:
                    entry = _add(tar, source, rel, name, needles, clean_copy)
                except OSError:  # changed or vanished under the walk: skipped
                    continue
                if entry is None:
                    continue
                if entry.get("redacted"):
                    redacted.append(entry["path"])
                entries.append(entry)
                total += entry["size"]
    manifest = staging / MANIFEST_FILE
    doc = {"v": 1, "run": run_id, "target": target, "tarball": tarball.name,
           "tarball_size": tarball.stat().st_size, "tarball_md5": file_md5(tarball),
           "files": entries}
    clean_copy.unlink(missing_ok=True)
    manifest.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return Packed(tarball, manifest, len(entries), total, tuple(sources), tuple(redacted))


def file_md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def unpack(folder: Path, home: Path, run_id: str) -> int:
    """Extract a fetched archive in ``folder`` into ``home``, verified against its
    manifest; refuses to overwrite anything. Returns the files restored."""
    manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    tarball = folder / str(manifest["tarball"])
    if tarball.stat().st_size != manifest["tarball_size"] or \
            file_md5(tarball) != manifest["tarball_md5"]:
        raise ArchiveMismatch(f"the fetched {tarball.name} differs from its manifest (size or "
                              f"MD5); nothing was restored")
    scratch = folder / "extract"
    if scratch.exists():
        remove_tree(scratch)
    scratch.mkdir()
    skipped: list[str] = []

    def keep(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, dest)
        except tarfile.FilterError:
            skipped.append(member.name)  # a link pointing out of the run: not restored
            return None

    with tarfile.open(tarball, "r:gz") as tar:
        tar.extractall(scratch, filter=keep)
    for entry in manifest["files"]:
        path = scratch / entry["path"]
        if not path.is_file() or path.stat().st_size != entry["size"] or \
                file_sha256(path) != entry["sha256"]:
            raise ArchiveMismatch(f"{entry['path']} did not come back byte-identical; "
                                  f"nothing was restored")
    tops = sorted({Path(e["path"]).parts[:2] for e in manifest["files"]})
    clashes = [str(home.joinpath(*top)) for top in tops if home.joinpath(*top).exists()]
    if clashes:
        raise ArchiveError(f"{', '.join(clashes)} already exist(s); nothing was restored; "
                           f"fix: move them away first")
    for top in tops:
        destination = home.joinpath(*top)
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(scratch.joinpath(*top), destination)
    remove_tree(scratch)
    return len(manifest["files"])


def remove_tree(path: Path) -> None:
    """``rm -rf`` that also clears read-only directories (a sandboxed agent's leftovers)."""
    def retry(func: Any, failed: str, _exc: Any) -> None:
        parent = os.path.dirname(failed)
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, os.stat(failed).st_mode | stat.S_IRWXU)
        func(failed)

    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onerror=retry)  # onexc needs Python 3.12
