"""The outgoing-text scan's cost: 1 MB of text against 50 known secrets, plain only
(the scan before issue 46) and with every encoded form (base64 in three alignments and
two alphabets, hex, URL-encoded, reversed, wrapped base64/hex across line breaks).

Prints the needles' count and build time (once per secret set: ``needles_for`` keeps
them), then the time of a clean scan (the common case: nothing found, every needle
sought), a redaction of the same text, and the scan of 1,000 short texts (ledger
events' fields) with the needles already built. Nothing asserts.

    python bench/secret_scan.py
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SECRETS = 50
TEXT_BYTES = 1024 * 1024
ROUNDS = 5


def _text(rng: random.Random) -> str:
    """1 MB of what outgoing text looks like: prose, code, numbers, some base64/hex."""
    docs = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md")))
    chunks = []
    size = 0
    while size < TEXT_BYTES:
        start = rng.randrange(0, max(1, len(docs) - 4000))
        chunk = docs[start:start + 4000] + "\n" + rng.randbytes(300).hex() + "\n"
        chunks.append(chunk)
        size += len(chunk)
    return "".join(chunks)[:TEXT_BYTES]


def _best(fn: object, rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    from outerloop.secret_forms import _build, needles_for

    rng = random.Random(46)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    secrets = ["sk-" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(20, 60)))
               for _ in range(SECRETS)]
    text = _text(rng)
    short = [text[i:i + 200] for i in range(0, 200_000, 200)]

    plain = sorted(secrets, key=len, reverse=True)
    before_scan = _best(lambda: any(s in text for s in plain))
    before_redact = _best(lambda: [text.replace(s, "[REDACTED]") for s in plain])
    before_short = _best(lambda: [any(s in t for s in plain) for t in short])

    _build.cache_clear()
    start = time.perf_counter()
    needles = needles_for(secrets)
    build = time.perf_counter() - start
    after_scan = _best(lambda: needles.find(text))
    after_redact = _best(lambda: needles.redact(text))
    after_lookup = _best(lambda: needles_for(secrets), rounds=100)
    after_short = _best(lambda: [needles.find(t) for t in short])

    print(f"secrets: {SECRETS}; text: {len(text):,} characters")
    print(f"needles: {len(needles.whole)} sought in the whole text, {len(needles.tokens)} in "
          f"its token runs; built in {build * 1000:.1f} ms (once per secret set), "
          f"found again in the cache in {after_lookup * 1e6:.0f} us")
    print(f"clean scan of 1 MB: before {before_scan * 1000:.1f} ms, after "
          f"{after_scan * 1000:.1f} ms")
    print(f"redaction of 1 MB: before {before_redact * 1000:.1f} ms, after "
          f"{after_redact * 1000:.1f} ms")
    print(f"1,000 texts of 200 characters: before {before_short * 1000:.1f} ms, after "
          f"{after_short * 1000:.1f} ms")


if __name__ == "__main__":
    main()
