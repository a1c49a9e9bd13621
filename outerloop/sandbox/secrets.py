"""Nothing secret leaves: find every secret value the kernel knows in outgoing text.

An agent always holds at least one secret (its own model key is in its session's
environment), and an unconfined one can read ``keys/``. So every post, PR, commit
message, research-log file and ledger event made from agent text is scanned for
every known value and refused when one is present — refused, not redacted, so the
agent is told and nothing half-cleaned is published. Markers (``<!-- outerloop:...``)
inside agent text are neutralised before posting, so only the kernel's own marker,
appended after, can ever be taken for the kernel's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from outerloop.config import Settings, environ, read_key
from outerloop.errors import ConfigError

MIN_SECRET_CHARS = 8
KEYS_DIR = "keys"
CREDENTIAL_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MAX_KEY_FILE_BYTES = 64 * 1024
PEM_EDGE = "-----"


def _values(text: str) -> list[str]:
    """A key file's secret values: the whole (stripped) text and, for a multi-line
    key (a PEM), each body line, so a partial copy is caught too."""
    text = text.strip()
    out = [text]
    lines = [line.strip() for line in text.splitlines()]
    if len(lines) > 1:
        out += [line for line in lines if not line.startswith(PEM_EDGE)]
    return [v for v in out if len(v) >= MIN_SECRET_CHARS]


def known_secrets(settings: Settings) -> list[str]:
    """Every secret value: the files in ``keys/``, the configured token and key
    files, and credential-looking variables of the kernel's own environment."""
    files: set[Path] = set()
    keys = settings.home / KEYS_DIR
    if keys.is_dir():
        files.update(p for p in keys.iterdir() if p.is_file() and not p.is_symlink())
    files.add(settings.path(settings.forge.token_file))
    if settings.harness.model_key_file:
        files.add(settings.path(settings.harness.model_key_file))
    found: list[str] = []
    for path in sorted(files):
        try:
            if path.is_file() and path.stat().st_size <= MAX_KEY_FILE_BYTES:
                found += _values(read_key(path))
        except (ConfigError, OSError, UnicodeDecodeError):
            try:
                found += _values(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    for name, value in environ().items():
        upper = name.upper()
        if upper.endswith(CREDENTIAL_SUFFIXES) or "API_KEY" in upper:
            found += _values(value)
    return sorted(set(found), key=len, reverse=True)


def secrets_in(value: object, secrets: Sequence[str]) -> bool:
    """Whether any secret appears in ``value`` (text, or anything JSON-serialisable,
    checked both raw and as JSON so an escaped copy is caught)."""
    if not secrets:
        return False
    if isinstance(value, str):
        return any(secret in value for secret in secrets)
    text = json.dumps(value, default=str)
    return any(secret in text or json.dumps(secret)[1:-1] in text for secret in secrets)


def neutralise_markers(text: str) -> str:
    """Agent text with every ``<!--`` shown as ``&lt;!--``: it renders the same to a
    reader and can never parse as a kernel marker."""
    return text.replace("<!--", "&lt;!--")


def refusal_note(where: Iterable[str]) -> str:
    listed = ", ".join(where)
    return (f"Refused: {listed} contains a secret value outerloop holds (a key or token); "
            f"nothing of it was recorded or published. Remove it and stage again.")
