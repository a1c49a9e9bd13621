"""Session evidence kept with the run, redacted of every known secret.

After each leg the kernel stores, beside the rendered prompt
(``runs/<id>/legs/NNN-prompt.md``), what the session said about itself
(``NNN-session.json``: stop reason, session id, turns, tokens, cost, error) and a
copy of the CLI's own transcript located by session id (``NNN-transcript.jsonl``).
The transcript may quote the session's environment (an agent can run ``env``) or a
file it read, so every copy (and the prompt) is redacted of every value of
``sandbox.secrets.known_secrets``, the one list the caller passes. Evidence is best effort:
a transcript that cannot be read is noted in ``NNN-session.json``, never fatal.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from outerloop.harness.base import SessionResult
from outerloop.sandbox.secrets import escaped
from outerloop.text import redact

MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024


def save_prompt(legs_dir: Path, leg: int, prompt: str, secrets: Sequence[str]) -> None:
    """Write ``NNN-prompt.md``, redacted: a wake prompt quotes job output and messages
    the agent wrote, which may carry a value it read."""
    legs_dir.mkdir(parents=True, exist_ok=True)
    (legs_dir / f"{leg:03d}-prompt.md").write_text(redact(prompt, secrets), encoding="utf-8")


def _tail(path: Path) -> bytes:
    """The last ``MAX_TRANSCRIPT_BYTES`` of the transcript, which lies in the session's
    HOME (agent-writable): a symlink as its last component is refused (``O_NOFOLLOW``:
    it could point at any file the kernel can read), as is anything but a regular file
    (a FIFO would block); a huge (sparse) file costs only its tail."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        os.lseek(fd, max(0, info.st_size - MAX_TRANSCRIPT_BYTES), os.SEEK_SET)
        chunks, left = [], MAX_TRANSCRIPT_BYTES
        while left > 0 and (chunk := os.read(fd, min(left, 1024 * 1024))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def save_evidence(legs_dir: Path, leg: int, result: SessionResult,
                  secrets: Sequence[str]) -> None:
    """Write ``NNN-session.json`` and, when the CLI left one, ``NNN-transcript.jsonl``."""
    legs_dir.mkdir(parents=True, exist_ok=True)
    secrets = escaped(secrets)
    record = result.model_dump(mode="json")
    if result.transcript_path:
        source = Path(result.transcript_path)
        try:
            data = _tail(source).decode("utf-8", "replace")
            copy = legs_dir / f"{leg:03d}-transcript.jsonl"
            copy.write_text(redact(data, secrets), encoding="utf-8")
            record["transcript_copy"] = copy.name
        except OSError as exc:
            record["transcript_error"] = f"cannot copy {source}: {exc}"
    text = redact(json.dumps(record, indent=2, sort_keys=True), secrets)
    (legs_dir / f"{leg:03d}-session.json").write_text(text + "\n", encoding="utf-8")
