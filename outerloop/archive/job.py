"""The archive job and the operator's restore: pack, upload, verify, then delete.

``archive_run`` runs inside the run's archive job (submitted by housekeeping, never
inside a tick). The order is the safety argument:

1. pack the run's files into ``archive/staging/<run>/`` (tarball + manifest), every
   file redacted of the kernel's known secret values (``archive/pack.py``);
2. ``rclone copy`` the staging folder to ``<to>/<owner__name>/<run>/``;
3. verify: ``rclone check --one-way --download`` (every byte read back and compared:
   multipart objects included, whatever metadata the store keeps) must report every
   local file as identical, and the listing (``lsjson`` with MD5) must show each file
   with the local size and MD5;
4. append ``archived`` (where, each file's size and MD5) to the run's archive file
   in the ledger (``ledger/<owner__name>/archive/<run>.jsonl``);
5. only then delete the local files.

Any failure before 5 raises ``ArchiveError`` (recorded as ``archive_failed``) and
deletes nothing local; housekeeping submits a new attempt on a later tick. A crash
between 4 and 5 leaves local files behind (``outerloop archive list`` says "local copy
present"); they are in the archive, verified, and may be deleted by hand.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from outerloop.archive.pack import file_md5, pack, remove_tree, run_sources, unpack
from outerloop.archive.rclone import ArchiveError, ArchiveMismatch, Rclone
from outerloop.archive.remote import Remote, rclone_binary, remote_of
from outerloop.archive.spec import ARCHIVE_DIR, restore_dir, staging_dir
from outerloop.config import Settings
from outerloop.errors import ConfigError, NotFound, OuterloopError
from outerloop.ledger import book
from outerloop.ledger import events as ev
from outerloop.sandbox.secrets import escaped, known_secrets


def _rclone(settings: Settings, remote: Remote) -> Rclone:
    return Rclone(rclone_binary(settings), remote, settings.archive.timeout_minutes * 60.0,
                  key_file=settings.archive.key_file)


def _writer(settings: Settings, target: str, run_id: str) -> book.LedgerWriter:
    """The run's archive file (one writer: the run's one archive job at a time, or the
    operator's restore)."""
    if not book.run_file(settings.home, target, run_id).exists():
        raise NotFound(f"no run {run_id} of {target} in the ledger; fix: check "
                       f"`outerloop status`")
    path = book.archive_file(settings.home, target, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    return book.LedgerWriter(path)


def archive_run(settings: Settings, target: str, run_id: str) -> ev.Archived:
    """Archive one ended run (see the module doc). Returns the ``archived`` recorded."""
    writer = _writer(settings, target, run_id)
    staging = staging_dir(settings.home, run_id)
    try:
        remote = remote_of(settings)
        rclone = _rclone(settings, remote)
        if not run_sources(settings.home, run_id):  # it never wrote a file: nothing to keep
            empty = writer.append(ev.Archived(run=run_id, where=remote.run_where(target, run_id),
                                              files=[], local_files=0, local_bytes=0))
            return empty
        if remote.bucket:  # drop multipart uploads a killed attempt left (older than 24 h)
            with contextlib.suppress(ArchiveError):  # a key without that right still works
                rclone.run("cleanup", remote.bucket, what="cleaning stale uploads")
        destination = remote.run_path(target, run_id)
        # ask first: a refused key then says so (a refused copy blames the path instead)
        rclone.run("lsjson", destination, what="reaching the archive", ok_codes=(0, 3))
        packed = pack(settings.home, run_id, target, staging, escaped(known_secrets(settings)))
        extra = ["--bwlimit", settings.archive.bwlimit] if settings.archive.bwlimit else []
        # no HEAD after each PUT: every byte is read back by ``verify`` anyway
        rclone.run("copy", str(staging), destination, "--checksum", "--s3-no-head",
                   "--s3-use-multipart-etag=true", *extra, what="uploading")
        listed = verify(rclone, staging, destination)
        archived = writer.append(ev.Archived(
            run=run_id, where=remote.run_where(target, run_id), files=listed,
            local_files=packed.files, local_bytes=packed.bytes))
    except (ArchiveError, ConfigError, OSError) as exc:
        error = str(exc) if isinstance(exc, OuterloopError) else \
            f"packing or staging failed ({type(exc).__name__}: {exc}); nothing local was deleted"
        writer.append(ev.ArchiveFailed(run=run_id, error=error[:2000]))
        remove_tree(staging)
        raise
    for source in packed.sources:
        remove_tree(source)
    remove_tree(staging)
    return archived


def verify(rclone: Rclone, local: Path, destination: str) -> list[ev.ArchivedFile]:
    """Prove ``destination`` holds every file of ``local`` byte for byte; return the
    listing (name, size, md5). Raises ``ArchiveMismatch`` naming what differs."""
    names = sorted(p.name for p in local.iterdir() if p.is_file())
    report = local.parent / f".{local.name}.check"
    report.unlink(missing_ok=True)
    try:
        done = rclone.run("check", str(local), destination, "--one-way", "--download",
                          "--combined", str(report), what="verifying", ok_codes=(0, 1))
        lines = report.read_text(encoding="utf-8").splitlines() if report.exists() else []
    finally:
        report.unlink(missing_ok=True)
    if done.returncode != 0 and not lines:
        raise rclone.error("verifying", done)
    same = sorted(line[2:] for line in lines if line.startswith("= "))
    differ = [line for line in lines if not line.startswith("= ")]
    if done.returncode != 0 or differ or same != names:
        errors = [line.split("ERROR : ", 1)[-1] for line in done.stderr.splitlines()
                  if "ERROR" in line][:5]
        raise ArchiveMismatch(
            f"verifying: {rclone.remote.where} does not match the local files ("
            f"{'; '.join(errors or differ or ['listing incomplete'])}); nothing local was "
            f"deleted, retried next tick")
    listing = json.loads(rclone.run("lsjson", destination, "--files-only", "--hash",
                                    "--hash-type", "md5", what="listing").stdout or "[]")
    seen = {str(item["Path"]): item for item in listing}
    files: list[ev.ArchivedFile] = []
    for name in names:
        path = local / name
        item = seen.get(name)
        size, md5 = path.stat().st_size, file_md5(path)
        remote_md5 = (item or {}).get("Hashes", {}).get("md5")
        if item is None or int(item["Size"]) != size or (remote_md5 and remote_md5 != md5):
            got = "missing" if item is None else f"{item['Size']} bytes, md5 {remote_md5}"
            raise ArchiveMismatch(f"verifying: {name} is listed as {got}, expected {size} "
                                  f"bytes, md5 {md5}; nothing local was deleted")
        files.append(ev.ArchivedFile(name=name, size=size, md5=md5))
    return files


def restore_run(settings: Settings, run_id: str) -> dict[str, Any]:
    """Bring an archived run back into the home, verified against the ledger's record
    of what was uploaded and the manifest's SHA-256 of every file."""
    from outerloop.ledger.book import rebuild

    run = rebuild(settings.home, save_cache=False).runs.get(run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in the ledger; fix: `outerloop archive list`")
    if run.archive is None:
        raise ArchiveError(f"run {run_id} was never archived; fix: `outerloop archive list` "
                           f"shows the runs that were")
    if not run.archive.files:
        raise ArchiveError(f"run {run_id} left no files, so nothing was archived; nothing to "
                           f"restore")
    remote = remote_of(settings)
    where = run.archive.where
    if where != remote.run_where(run.target, run_id):
        raise ArchiveError(f"run {run_id} was archived to {where}, but archive.to is now "
                           f"{remote.where}; fix: set archive.to back to restore it")
    rclone = _rclone(settings, remote)
    folder = restore_dir(settings.home, run_id)
    remove_tree(folder)
    folder.mkdir(parents=True)
    try:
        rclone.run("copy", remote.run_path(run.target, run_id), str(folder), "--checksum",
                   what="fetching")
        for item in run.archive.files:
            path = folder / item.name
            if not path.is_file() or path.stat().st_size != item.size or \
                    file_md5(path) != item.md5:
                raise ArchiveMismatch(f"fetching: {item.name} differs from what was "
                                      f"archived (size or MD5); nothing was restored")
        count = unpack(folder, settings.home, run_id)
    finally:
        remove_tree(folder)
    _writer(settings, run.target, run_id).append(ev.ArchiveRestored(run=run_id, where=where))
    return {"run": run_id, "where": where, "files": count}


def archived_runs(settings: Settings) -> list[dict[str, Any]]:
    """Every run the ledger says was archived (or failed to be), oldest first."""
    from outerloop.ledger.book import rebuild

    rows = []
    for run in rebuild(settings.home, save_cache=False).runs.values():
        if run.archive is None and run.archive_error is None:
            continue
        archive = run.archive
        rows.append({
            "run": run.run_id, "target": run.target, "ending": run.ending,
            "archived_at": archive.at if archive else None,
            "where": archive.where if archive else None,
            "bytes": archive.local_bytes if archive else None,
            "files": archive.local_files if archive else None,
            "restored_at": run.restored_at, "error": run.archive_error,
            "local": (settings.home / "runs" / run.run_id).exists(),
        })
    return sorted(rows, key=lambda r: (str(r["archived_at"] or ""), r["run"]))


__all__ = ["ARCHIVE_DIR", "archive_run", "archived_runs", "restore_run", "verify"]
