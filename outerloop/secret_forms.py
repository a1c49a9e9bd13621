"""Every form a known secret can leave in: the needles the outgoing-text scan looks for.

A key an agent copied out rarely travels plain once the plain copy was refused: it was
posted base64-encoded as a thread message (issue 46). So every secret of at least
``MIN_SECRET_CHARS`` characters is also sought as

- base64, standard and URL-safe alphabets, in each of the three byte alignments (the
  secret's encoding when 0, 1 or 2 other bytes come before it), keeping only the
  characters its own bytes decide (the edge characters that also depend on the bytes
  around it are cut);
- hex, lower and upper case;
- URL-encoded: every byte percent-encoded (upper and lower hex digits), and only the
  reserved ones (``quote`` with and without ``/`` kept, and the form encoding);
- reversed;
- and across line breaks: tools wrap encodings (``base64`` at 76 characters, ``xxd -p``
  at 60), so a needle made only of base64, hex and percent characters
  (``TOKEN_CHARS``: a plain token like ``sk-...`` too) is sought in the text's runs of
  those characters, the runs that only whitespace or JSON's ``\\n``/``\\r``/``\\t``
  separate joined (pieces of at least ``MIN_SECRET_CHARS``, the last one any length).

A shorter value is sought plain only (``MIN_PLAIN_CHARS``), as before: its encodings
would be too short to tell from ordinary text. The needles are built once per secret
set (``needles_for`` caches them); a scan is one regular-expression pass collecting
the token runs, then one substring search per needle (``bench/secret_scan.py``: 1 MB
against 50 secrets). What this does not catch (a secret encrypted, compressed, split
across posts or into pieces under ``MIN_SECRET_CHARS``, encoded twice) is listed in
docs/security.md: the sandbox keeping ``keys/`` unreadable is the first line; this is
the second.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

MIN_SECRET_CHARS = 8
"""A value shorter than this is no secret to chase encoded (``sandbox.secrets`` keeps
no shorter value from a key file either); each encoded needle is at least this long."""
MIN_PLAIN_CHARS = 4
"""Shorter values are never sought at all (``redact``'s rule since the start)."""
REDACTED = "[REDACTED]"
BASE64_ALIGNMENTS = 3
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-%")
"""The characters of base64 (both alphabets), hex and percent-encoding. A needle made
only of them lies inside a run of them in the text: such needles are sought in the
text's runs (one regular expression pass), joined across line breaks, not in the
whole text."""
_T = r"[A-Za-z0-9+/_%-]"
_BREAK = r"(?:\s|\\[nrt])+"
_RUNS = re.compile(rf"{_T}{{{MIN_SECRET_CHARS},}}(?:{_BREAK}{_T}{{{MIN_SECRET_CHARS},}})*"
                   rf"(?:{_BREAK}{_T}{{1,{MIN_SECRET_CHARS - 1}}}(?!{_T}))?")
"""A run of token characters at least ``MIN_SECRET_CHARS`` long, with the runs after it
that only line breaks (whitespace, JSON's ``\\n``) separate, the last of them possibly
short (a wrapped encoding's last line)."""
_BREAKS = re.compile(_BREAK)
_ESCAPED_BREAKS = ("\\n", "\\r", "\\t")
_GAP = r"(?:\s|\\[nrt])*"
_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _base64_forms(raw: bytes) -> list[str]:
    """The secret's base64 in each alignment and alphabet: character ``i`` covers bits
    ``[6i, 6i+6)`` of the stream, so those inside the secret's bits are stable."""
    forms = []
    for offset in range(BASE64_ALIGNMENTS):
        start = -(-8 * offset // 6)
        end = 8 * (offset + len(raw)) // 6
        padded = bytes(offset) + raw
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.append(encode(padded).decode("ascii")[start:end])
    return forms


def _url_forms(secret: str, raw: bytes) -> list[str]:
    every = "".join(f"%{b:02X}" for b in raw)
    reserved = {urllib.parse.quote(secret, safe=""), urllib.parse.quote(secret),
                urllib.parse.quote_plus(secret)}
    lower = {_PERCENT.sub(lambda m: m.group(0).lower(), f) for f in reserved}
    return [every, every.lower(), *sorted(reserved), *sorted(lower)]


def encoded_forms(secret: str) -> list[str]:
    """Every encoded form of ``secret`` the scan seeks (none for a short value)."""
    if len(secret) < MIN_SECRET_CHARS:
        return []
    raw = secret.encode("utf-8")
    forms = [*_base64_forms(raw), raw.hex(), raw.hex().upper(), *_url_forms(secret, raw),
             secret[::-1]]
    return [f for f in dict.fromkeys(forms) if len(f) >= MIN_SECRET_CHARS and f != secret]


def _token(needle: str) -> bool:
    return len(needle) >= MIN_SECRET_CHARS and TOKEN_CHARS.issuperset(needle)


@dataclass(frozen=True)
class Needles:
    """A secret set's needles, longest first: ``whole``, sought in the text as it is;
    ``tokens`` (made of ``TOKEN_CHARS`` only), sought in the text's runs of those
    characters with the line breaks inside them removed (``runs``)."""

    whole: tuple[str, ...]
    tokens: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.whole or self.tokens)

    def runs(self, text: str) -> str:
        """``text``'s token runs, breaks removed, one a line ("" when there is none)."""
        if not self.tokens:
            return ""
        joined = "\0".join(_RUNS.findall(text))
        if _BREAKS.search(joined) is None:
            return joined
        joined = "".join(joined.split())  # whitespace (str.split: far faster than a regex)
        for escape in _ESCAPED_BREAKS:
            joined = joined.replace(escape, "")
        return joined

    def find(self, text: str) -> str | None:
        """The first needle ``text`` carries, or None."""
        for needle in self.whole:
            if needle in text:
                return needle
        runs = self.runs(text)
        if runs:
            for needle in self.tokens:
                if needle in runs:
                    return needle
        return None

    def redact(self, text: str) -> str:
        """``text`` with every needle replaced by ``[REDACTED]`` (one split by line
        breaks with the breaks inside it)."""
        for needle in self.whole:
            if needle in text:
                text = text.replace(needle, REDACTED)
        runs = self.runs(text)
        if runs:
            for needle in self.tokens:
                if needle in runs:
                    text = text.replace(needle, REDACTED)
                    text = re.sub(_GAP.join(map(re.escape, needle)), REDACTED, text)
        return text


def needles_for(secrets: Iterable[str]) -> Needles:
    """The needles of ``secrets`` (values under ``MIN_PLAIN_CHARS`` dropped), built once
    per distinct set and kept (a tick's or a job's set is the same at every call)."""
    return _build(tuple(sorted({s for s in secrets if s and len(s) >= MIN_PLAIN_CHARS})))


@lru_cache(maxsize=16)
def _build(secrets: tuple[str, ...]) -> Needles:
    found: dict[str, None] = {}
    for secret in secrets:
        found[secret] = None
        found[json.dumps(secret)[1:-1]] = None  # as it reads inside a JSON string
        found.update(dict.fromkeys(encoded_forms(secret)))
    ordered = sorted(found, key=lambda f: (-len(f), f))
    return Needles(whole=tuple(f for f in ordered if not _token(f)),
                   tokens=tuple(f for f in ordered if _token(f)))
