"""The scorer's own seed: what draws a benchmark's hidden test truth.

A benchmark's ``seed_env`` reaches the candidate's process (its ``command``), so
whatever is drawn from it (instances, a split, test points) the candidate can draw
too: a trainer that re-draws the test truth from the seed it is given, or from any
variable ending in ``SEED`` it finds, learns the answers. The trusted scorer therefore
gets a second seed, ``OUTERLOOP_SCORE_SEED``, that no process of the candidate's ever
sees:

- it is derived per pair from the pair's hidden seed with a kernel secret
  (HMAC-SHA256 under ``keys/score-seed.key``, 0600, made by ``outerloop init`` or by
  the first pair job that needs it), so both sides of a pair are scored on the same
  truth (the comparison stays paired) and a retried pair job scores the same;
- it is given only to the scorer's process (``attempt/measure.py``); the command's
  environment never holds an ``OUTERLOOP_*`` variable, and the candidate's processes
  are all dead before the scorer starts;
- it never equals the pair's seed, so a benchmark that draws its truth from it never
  draws it from anything the candidate read.

A benchmark draws its hidden truth from this variable and its public inputs (TSP
instances, a training split) from ``seed_env`` (docs/contract.md, "Seeds: what the
candidate may see").
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from outerloop.private_files import ensure_random_key

SCORE_SEED_VAR = "OUTERLOOP_SCORE_SEED"
KEY_FILE = "keys/score-seed.key"
MAX_SEED = 2**31 - 2


def key_path(home: Path) -> Path:
    return home / KEY_FILE


def ensure_key(home: Path) -> str:
    """The kernel secret scorer seeds are derived with (made when there is none)."""
    return ensure_random_key(key_path(home))


def derive(key: str, run_id: str, benchmark: str, seed: int) -> int:
    """The scorer's seed for the pair of ``run_id`` on ``benchmark`` under the hidden
    ``seed``: in ``1..MAX_SEED``, never ``seed`` itself."""
    message = f"{run_id}\n{benchmark}\n{seed}".encode()
    digest = hmac.new(key.encode("ascii"), message, hashlib.sha256).hexdigest()
    drawn = int(digest[:12], 16) % MAX_SEED + 1
    return drawn if drawn != seed else drawn % MAX_SEED + 1


def for_pair(home: Path, run_id: str, benchmark: str, seed: int) -> int:
    """``derive`` under the home's key (``ConfigError`` when the key file is not ours
    or others may read it: the fix is in the message)."""
    return derive(ensure_key(home), run_id, benchmark, seed)
