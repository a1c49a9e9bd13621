"""The commands every confined child of this home must be able to start, and whether
they do (``sandbox/traps.py``): the ``python3``/``python`` on ``PATH``, the kernel's
own interpreter (the scripted harness runs the agent's tool with it) and the agent
CLI. ``doctor``, the tick (on its first tick and whenever the environment changes)
and the attempt job (before a run's first leg) ask; a failure names the path and the
``[sandbox] read_only`` fix instead of letting every run end as if the agent gave up.
"""

from __future__ import annotations

import hashlib
import json
import sys

from outerloop.config import Settings, environ
from outerloop.fleet import all_seats
from outerloop.harness.agent_cli import resolve_binary
from outerloop.kinds import MODEL_CLIS
from outerloop.sandbox import SandboxError, for_run, install_dir
from outerloop.sandbox.confine import DEFAULT_PATH
from outerloop.sandbox.traps import ENVIRONMENT_BROKEN, Needed, Trap, find_traps, pythons_on

__all__ = ["ENVIRONMENT_BROKEN", "broken_environment", "environment_traps", "needed_commands",
           "tick_notes"]

PROVED_FILE = "cache/environment-proved.json"
"""The fingerprint of the last environment whose commands all started confined."""


def children_path() -> str:
    """The ``PATH`` confined children get: this process's (jobs inherit the submitter's)."""
    return environ().get("PATH") or DEFAULT_PATH


def needed_commands(settings: Settings, path_var: str) -> list[Needed]:
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
    ``PATH``, the interpreter, the sandbox settings or the harness change; while a
    trap is found it is proved (and said) every tick until fixed."""
    path_var = children_path()
    proved = settings.home / PROVED_FILE
    mark = _fingerprint(settings, path_var)
    try:
        if proved.read_text(encoding="utf-8").strip() == mark:
            return []
    except OSError:
        pass
    traps = environment_traps(settings)
    if traps:
        return [t.message() for t in traps]
    try:
        proved.parent.mkdir(parents=True, exist_ok=True)
        proved.write_text(mark + "\n", encoding="utf-8")
    except OSError:
        pass  # proved again next tick
    return []


def broken_environment(settings: Settings) -> str | None:
    """One sentence naming every trap, or None: what a run's ending says instead of
    blaming the agent."""
    traps = environment_traps(settings)
    return "; ".join(t.message() for t in traps) if traps else None


