"""The commands every confined child of this home must be able to start, and whether
they do (``sandbox/traps.py``): the ``python3``/``python`` on ``PATH``, the kernel's
own interpreter (the scripted harness runs the agent's tool with it) and the agent
CLI. ``doctor``, the tick (on its first tick and whenever the environment changes)
and the attempt job (before a run's first leg) ask; a failure names the path and the
``[sandbox] read_only`` fix instead of letting every run end as if the agent gave up.

The sandbox's modules are imported only to prove: a tick whose environment was proved
(``tick_notes``) reads the verdict back and builds no confinement.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from outerloop import clock, kept_proof
from outerloop.config import Settings, environ
from outerloop.fleet import all_seats
from outerloop.harness.agent_cli import resolve_binary
from outerloop.kinds import MODEL_CLIS
from outerloop.sandbox.base import ENVIRONMENT_BROKEN

if TYPE_CHECKING:
    from outerloop.sandbox.traps import Needed, Trap

__all__ = ["ENVIRONMENT_BROKEN", "broken_environment", "environment_traps", "needed_commands",
           "tick_notes"]

PROVED_FILE = "cache/environment-proved.json"
"""The last proof a tick made: the environment's fingerprint, the traps it found (their
messages), when (``{"mark", "traps", "at"}``)."""

TRAP_RECHECK_S = 600.0
"""How long a tick says the traps it found without proving again (the fingerprint
unchanged). Proving starts every needed command confined, ~0.1-0.2 s a tick. A fix to
``PATH``, the interpreter, ``[sandbox]`` or a harness changes the fingerprint and is
proved at once; a fix made elsewhere (a directory made readable) is seen within this
time. A clean proof holds until the fingerprint changes; ``doctor`` and the attempt job
always prove afresh."""


def children_path() -> str:
    """The ``PATH`` confined children get: this process's (jobs inherit the submitter's)."""
    path = environ().get("PATH")
    if path:
        return path
    from outerloop.sandbox.confine import DEFAULT_PATH

    return DEFAULT_PATH


def needed_commands(settings: Settings, path_var: str) -> list[Needed]:
    from outerloop.sandbox.policy import install_dir
    from outerloop.sandbox.traps import Needed, pythons_on

    needed = pythons_on(path_var)
    needed.append(Needed("the kernel's interpreter", (sys.executable, "-I", "-c", "pass")))
    seen: set[str] = set()
    for seat in all_seats(settings):
        kind = seat.harness.kind
        if kind not in MODEL_CLIS:
            continue
        found = resolve_binary(seat.harness.binary or MODEL_CLIS[kind].binary)
        if found is not None and found not in seen:  # a missing CLI is doctor's check
            seen.add(found)
            needed.append(Needed(f"the agent CLI ({kind})", (found, "--version"),
                                 readable=(str(install_dir(found)),)))
    return needed


def strictest_kind(settings: Settings) -> str:
    """A model kind when any seat runs one (the sandbox then refuses ``off`` unless
    allowed), else ``[harness]``'s."""
    kinds = [s.harness.kind for s in all_seats(settings)]
    return next((k for k in kinds if k in MODEL_CLIS), settings.harness.kind)


def environment_traps(settings: Settings) -> list[Trap]:
    """Every needed command that cannot start inside the children's sandbox (none
    under ``off``, or when the sandbox itself is refused: that is its own error)."""
    from outerloop.sandbox.base import SandboxError
    from outerloop.sandbox.confine import for_run
    from outerloop.sandbox.traps import find_traps

    path_var = children_path()
    try:
        confinement = for_run(settings, strictest_kind(settings))
    except SandboxError:
        return []
    return find_traps(confinement, needed_commands(settings, path_var), path_var,
                      settings.home)


def _fingerprint(settings: Settings, path_var: str) -> str:
    # repr, not model_dump_json: every field's value alike, without building the
    # models' serializers on a tick that has no other use for them
    parts = [path_var, sys.executable, repr(settings.sandbox),
             *[repr(s.harness) for s in all_seats(settings)]]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def tick_notes(settings: Settings) -> list[str]:
    """The tick's notes on environment traps: proved on the first tick and again when
    ``PATH``, the interpreter, the sandbox settings or the harness change; while a trap
    is found it is said every tick and proved again every ``TRAP_RECHECK_S``."""
    path_var = children_path()
    proved = settings.home / PROVED_FILE
    mark = _fingerprint(settings, path_var)
    now = clock.now().timestamp()
    kept = _read_proof(proved)
    if kept is not None and kept["mark"] == mark and (
            not kept["traps"] or 0 <= now - kept["at"] < TRAP_RECHECK_S):
        return list(kept["traps"])
    traps = [t.message() for t in environment_traps(settings)]
    kept_proof.keep(proved, {"mark": mark, "traps": traps, "at": now})
    return traps


def _read_proof(proved: Path) -> dict[str, Any] | None:
    """The kept proof, or None (none, or not one this version wrote: prove again). A
    bare fingerprint (an earlier version's) is a clean proof."""
    text = kept_proof.read_text(proved)
    if text is None:
        return None
    try:
        kept = json.loads(text)
    except ValueError:
        return {"mark": text, "traps": [], "at": 0.0}
    if not (isinstance(kept, dict) and isinstance(kept.get("mark"), str)
            and isinstance(kept.get("traps"), list)
            and all(isinstance(t, str) for t in kept["traps"])
            and isinstance(kept.get("at"), int | float)):
        return None
    return kept


def broken_environment(settings: Settings) -> str | None:
    """One sentence naming every trap, or None: what a run's ending says instead of
    blaming the agent."""
    traps = environment_traps(settings)
    return "; ".join(t.message() for t in traps) if traps else None


