"""A secret leaves encoded as surely as plain: base64 (both alphabets, any alignment,
wrapped), hex, URL-encoded and reversed copies are found and redacted like the value
itself, and the needles never match ordinary text (the minimum length holds).

The encoded texts here are made the way an agent would make them (the standard
library's encoders over the secret with bytes around it), independently of the code
that builds the needles."""

from __future__ import annotations

import base64
import random
import textwrap
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from outerloop.sandbox.secrets import MIN_SECRET_CHARS, secrets_in
from outerloop.text import redact, scrubbed

SECRET = "sk-PLANTEDmodelKEY0123456789abcdef/+~?&="
"""A value holding reserved characters and bytes whose base64 differs by alphabet."""
DOCS = Path(__file__).resolve().parents[2] / "docs"


def _b64(prefix: bytes, urlsafe: bool, wrap: bool = False) -> Callable[[str], str]:
    def encode(secret: str) -> str:
        raw = prefix + secret.encode() + b"\n"  # a file's trailing newline after it
        text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()
        return "\n".join(textwrap.wrap(text, 76)) if wrap else text
    return encode


FORMS: dict[str, Callable[[str], str]] = {
    "base64-aligned": _b64(b"", urlsafe=False),
    "base64-after-1-byte": _b64(b"k", urlsafe=False),
    "base64-after-2-bytes": _b64(b"k=", urlsafe=False),
    "base64url-aligned": _b64(b"", urlsafe=True),
    "base64url-after-1-byte": _b64(b"\xff", urlsafe=True),
    "base64url-after-2-bytes": _b64(b"\xff\xfe", urlsafe=True),
    "base64-wrapped-at-76": _b64(b"the token I found: ", urlsafe=False, wrap=True),
    "hex-lower": lambda s: s.encode().hex(),
    "hex-upper": lambda s: s.encode().hex().upper(),
    "hex-wrapped-at-60": lambda s: "\n".join(textwrap.wrap(s.encode().hex(), 60)),  # xxd -p
    "url-every-byte": lambda s: "".join(f"%{b:02X}" for b in s.encode()),
    "url-every-byte-lower": lambda s: "".join(f"%{b:02x}" for b in s.encode()),
    "url-reserved-only": lambda s: urllib.parse.quote(s, safe=""),
    "url-form": lambda s: urllib.parse.quote_plus(s),
    "reversed": lambda s: s[::-1],
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_encoded_secret_is_found_when_outgoing_text_carries_it(form: str) -> None:
    encoded = FORMS[form](SECRET)
    assert SECRET not in encoded  # the plain scan alone misses it
    if "wrapped" in form:
        assert "\n" in encoded  # the secret's encoding straddles a line break
    text = f"my notes:\n{encoded}\nthat is all"
    assert secrets_in(text, [SECRET]), form
    assert secrets_in({"messages": [{"text": text}]}, [SECRET]), form
    assert secrets_in({"messages": [{"text": text}]}, ["unrelated-value-1234", SECRET])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_encoded_secret_is_redacted_when_evidence_or_an_event_carries_it(form: str) -> None:
    encoded = FORMS[form](SECRET)
    text = f"found: {encoded} (done)"
    clean = redact(text, [SECRET])
    assert clean != text and "[REDACTED]" in clean, form
    assert not secrets_in(clean, [SECRET]), form
    assert clean.startswith("found: ") and clean.endswith(" (done)")
    assert scrubbed({"a": [text]}, [SECRET]) == {"a": [clean]}


def test_secret_is_found_in_every_alignment_when_any_bytes_come_before_it() -> None:
    rng = random.Random(46)
    for _ in range(300):
        before = rng.randbytes(rng.randrange(0, 7))
        after = rng.randbytes(rng.randrange(0, 7))
        raw = before + SECRET.encode() + after
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(raw).decode()
            assert secrets_in(text, [SECRET]), (before, after, encode.__name__)


def test_needles_never_match_ordinary_text_when_secrets_are_random() -> None:
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    secrets = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(8, 64)))
               for _ in range(50)]
    prose = "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))
    assert not secrets_in(prose, secrets)
    assert redact(prose, secrets) == prose


def test_short_value_gets_no_encoded_needles_when_under_the_minimum() -> None:
    short = "pa55wd!"  # one under MIN_SECRET_CHARS: a value too common to chase encoded
    assert len(short) == MIN_SECRET_CHARS - 1
    assert secrets_in(f"x {short} y", [short])  # plain: found, as before
    for form in ("hex-lower", "reversed", "base64-aligned", "url-every-byte"):
        assert not secrets_in(f"x {FORMS[form](short)} y", [short]), form

