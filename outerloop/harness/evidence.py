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
from collections.abc import Sequence
from pathlib import Path

from outerloop.harness.base import SessionResult
from outerloop.sandbox import beneath
from outerloop.sandbox.secrets import escaped
from outerloop.text import redact

MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024


def save_prompt(legs_dir: Path, leg: int, prompt: str, secrets: Sequence[str]) -> None:
    """Write ``NNN-prompt.md``, redacted: a wake prompt quotes job output and messages
    the agent wrote, which may carry a value it read."""
    legs_dir.mkdir(parents=True, exist_ok=True)
    (legs_dir / f"{leg:03d}-prompt.md").write_text(redact(prompt, secrets), encoding="utf-8")


def _read_transcript(source: Path, session_home: Path | None) -> bytes:
    """The transcript's last ``MAX_TRANSCRIPT_BYTES``. One inside the session HOME (the
    agent's) is read without following any symlink on the way (``sandbox/beneath``)."""
    if session_home is not None and source.is_relative_to(session_home):
        return beneath.read_tail(session_home, source.relative_to(session_home).as_posix(),
                                 MAX_TRANSCRIPT_BYTES)
    return beneath.read_tail(source.parent, source.name, MAX_TRANSCRIPT_BYTES)


def save_evidence(legs_dir: Path, leg: int, result: SessionResult,
                  secrets: Sequence[str], session_home: Path | None = None) -> None:
    """Write ``NNN-session.json`` and, when the CLI left one, ``NNN-transcript.jsonl``."""
    legs_dir.mkdir(parents=True, exist_ok=True)
    secrets = escaped(secrets)
    record = result.model_dump(mode="json")
    if result.transcript_path:
        source = Path(result.transcript_path)
        try:
            data = _read_transcript(source, session_home).decode("utf-8", "replace")
            copy = legs_dir / f"{leg:03d}-transcript.jsonl"
            copy.write_text(redact(data, secrets), encoding="utf-8")
            record["transcript_copy"] = copy.name
        except OSError as exc:
            record["transcript_error"] = f"cannot copy {source}: {exc}"
    text = redact(json.dumps(record, indent=2, sort_keys=True), secrets)
    (legs_dir / f"{leg:03d}-session.json").write_text(text + "\n", encoding="utf-8")
