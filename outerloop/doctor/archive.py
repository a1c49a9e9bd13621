"""``[archive]``: rclone, the key file, and one listing of the destination."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok

ARCHIVE_PROBE_TIMEOUT_S = 30.0


def check_archive(settings: Settings) -> list[Check]:
    if not settings.archive.to:
        return [ok("archive", "not configured (ended runs stay on disk)")]
    from outerloop.archive.rclone import ArchiveError, Rclone
    from outerloop.archive.remote import rclone_binary, remote_of
    from outerloop.errors import ConfigError

    try:
        remote = remote_of(settings)
        rclone = Rclone(rclone_binary(settings), remote, ARCHIVE_PROBE_TIMEOUT_S,
                        key_file=settings.archive.key_file)
        rclone.run("lsjson", remote.root, "--max-depth", "1", what="listing the archive",
                   ok_codes=(0, 3))
    except (ConfigError, ArchiveError) as exc:
        detail, _, hint = str(exc).partition("; fix: ")
        return [fail("archive", detail, hint or "check [archive] in outerloop.toml")]
    return [ok("archive", f"{remote.where} reachable with {settings.archive.key_file}")]
