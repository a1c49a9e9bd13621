"""Nothing secret leaves: the one list of secret values, and the scan of outgoing text.

An agent always holds at least one secret (its own model key is in its session's
environment), and an unconfined one can read ``keys/``. ``known_secrets`` is the one
list of every value the kernel knows (every file in ``keys/`` and the configured key
files, ``name = value`` lines and rclone-obscured passwords included, plus
credential-looking variables of the kernel's environment). It is used three ways:

- every post, PR, commit message, research-log file and ledger event made from agent
  text is scanned and *refused* when a value is present, plain or encoded (base64 in
  any alignment, hex, URL-encoded, reversed: ``outerloop/secret_forms.py``; the agent
  is told, nothing half-cleaned is published);
- every transcript and prompt saved under ``runs/<run>/legs/`` is *redacted*
  (evidence: what the agent did stays readable, the value does not);
- every file the archive job packs is *redacted* (``archive/pack.py``): refusing would
  let an agent keep its run out of the archive for ever by echoing its own model key.

Markers (``<!-- outerloop:...``) inside agent text are neutralised before posting (a
comment, an issue, a pull request's body), so only the kernel's own marker, appended
after, can ever be taken for the kernel's.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from outerloop.config import Settings, environ
from outerloop.errors import ConfigError
from outerloop.private_files import read_key
from outerloop.secret_forms import MIN_SECRET_CHARS, needles_for

__all__ = ["MIN_SECRET_CHARS", "escaped", "file_secrets", "known_secrets", "neutralise_markers",
           "refusal_note", "secret_files", "secrets_in"]

KEYS_DIR = "keys"
CREDENTIAL_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MAX_KEY_FILE_BYTES = 64 * 1024
PEM_EDGE = "-----"
CREDENTIAL_WORDS = ("key", "secret", "pass", "token", "credential", "auth", "sas_url",
                    "private", "cookie", "session")
"""A ``name = value`` line whose name holds one of these carries a secret value
(``secret_access_key``, rclone's ``pass``, ``client_secret``, ``token``...)."""
PATH_SUFFIXES = ("_file", "_path", "_dir")
"""...unless the name says the value is a path (``key_file``): the path is no secret."""
RCLONE_OBSCURED = ("pass", "password", "password2")
"""rclone.conf keeps these obscured (reversibly): the revealed value is a secret too."""
AES_BLOCK_BYTES = 16
_RCLONE_KEY = bytes.fromhex("9c935b48730a554d6bfd7c63c886a92bd390198eb8128afbf4de162b8b95f638")
_CONFIG_LINE = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*[=:]\s*(.*?)\s*$")
_SECTION_LINE = re.compile(r"^\s*\[[^\]]*\]\s*$")


def _credential_name(name: str) -> bool:
    lower = name.lower()
    return any(w in lower for w in CREDENTIAL_WORDS) and not lower.endswith(PATH_SUFFIXES)


def _reveal_rclone(value: str) -> str | None:
    """The plain text of an rclone-obscured value (``rclone reveal``), or None."""
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        if len(raw) <= AES_BLOCK_BYTES:
            return None
        iv, body = raw[:AES_BLOCK_BYTES], raw[AES_BLOCK_BYTES:]
        decryptor = Cipher(algorithms.AES(_RCLONE_KEY), modes.CTR(iv)).decryptor()
        plain = (decryptor.update(body) + decryptor.finalize()).decode("utf-8")
    except (ImportError, ValueError, UnicodeDecodeError):
        return None
    return plain if plain.isprintable() else None


def _config_values(lines: list[str]) -> list[str] | None:
    """The secret values of a ``name = value`` file (an rclone.conf, the archive key
    file, an ini or dotenv file), or None when ``lines`` are not all of that shape.
    A JSON value (rclone's OAuth ``token = {...}``) gives its string members too."""
    found: list[str] = []
    for line in lines:
        if not line.strip() or line.lstrip().startswith(("#", ";")) or _SECTION_LINE.match(line):
            continue
        match = _CONFIG_LINE.match(line.removeprefix("export "))
        if match is None:
            return None
        name, value = match.group(1), match.group(2).strip().strip("\"'")
        if not _credential_name(name):
            continue
        found.append(value)
        if name.lower() in RCLONE_OBSCURED and (plain := _reveal_rclone(value)):
            found.append(plain)
        if value.startswith("{"):
            try:
                doc = json.loads(value)
            except ValueError:
                continue
            if isinstance(doc, dict):
                found += [v for k, v in doc.items() if isinstance(v, str) and _credential_name(k)]
    return found


def file_secrets(text: str) -> list[str]:
    """A key file's secret values: the whole (stripped) text; for a ``name = value``
    file, each credential-named value; for another multi-line key (a PEM), each body
    line, so a partial copy is caught too."""
    text = text.strip()
    out = [text]
    lines = text.splitlines()
    if len(lines) > 1 or _CONFIG_LINE.match(text):
        values = _config_values(lines)
        if values is not None:
            out += values
        else:
            out += [s for line in lines if not (s := line.strip()).startswith(PEM_EDGE)]
    return [v for v in out if len(v) >= MIN_SECRET_CHARS]


def secret_files(settings: Settings) -> list[Path]:
    """Every file holding a secret: ``keys/*`` and the configured token, model key,
    each endpoint's key, archive key and rclone.conf (wherever they live)."""
    files: set[Path] = set()
    keys = settings.home / KEYS_DIR
    if keys.is_dir():
        files.update(p for p in keys.iterdir() if p.is_file() and not p.is_symlink())
    files.add(settings.path(settings.forge.token_file))
    endpoint_keys = [e.key_file for e in settings.endpoints.values()]
    for name in (settings.harness.model_key_file, settings.archive.key_file,
                 settings.archive.rclone_config, *endpoint_keys):
        if name:
            files.add(settings.path(name))
    return sorted(files)


def known_secrets(settings: Settings) -> list[str]:
    """Every secret value the kernel knows, longest first: the values of every
    ``secret_files`` file (``file_secrets``) and credential-looking variables of the
    kernel's own environment. The one list every post, saved transcript and archive
    is scanned against (``docs/security.md``). An unreadable file is skipped (what it
    holds cannot be matched, and a broken key file is reported by ``doctor``)."""
    found: list[str] = []
    for path in secret_files(settings):
        try:
            if path.is_file() and path.stat().st_size <= MAX_KEY_FILE_BYTES:
                found += file_secrets(read_key(path))
        except (ConfigError, OSError, UnicodeDecodeError):
            try:
                found += file_secrets(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    for name, value in environ().items():
        upper = name.upper()
        if upper.endswith(CREDENTIAL_SUFFIXES) or "API_KEY" in upper:
            found += file_secrets(value)
    return sorted(set(found), key=len, reverse=True)


def escaped(secrets: Sequence[str]) -> list[str]:
    """``secrets`` plus each as it reads inside a JSON string: a JSONL transcript quotes
    a multi-line or non-ASCII value escaped. What redaction of a file replaces."""
    return list(dict.fromkeys([*secrets, *(json.dumps(s)[1:-1] for s in secrets)]))


def secrets_in(value: object, secrets: Sequence[str]) -> bool:
    """Whether any secret, or an encoded form of one (``secret_forms``: base64 in any
    alignment, hex, URL-encoded, reversed), appears in ``value`` (text, or anything
    JSON-serialisable, checked as JSON so an escaped copy is caught too)."""
    if not secrets:
        return False
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return needles_for(secrets).find(text) is not None


def neutralise_markers(text: str) -> str:
    """Agent text with every ``<!--`` shown as ``&lt;!--``: it renders the same to a
    reader and can never parse as a kernel marker."""
    return text.replace("<!--", "&lt;!--")


def refusal_note(where: Iterable[str]) -> str:
    listed = ", ".join(where)
    return (f"Refused: {listed} contains a secret value outerloop holds (a key or token); "
            f"nothing of it was recorded or published. Remove it and stage again.")
