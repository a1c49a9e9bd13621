"""Environment traps: every command confined children need starts inside the sandbox
(``harness/needs.py``, ``sandbox/traps.py``): the ``python3`` on ``PATH`` (a pyenv shim
followed to what it runs), the kernel's interpreter, the agent CLI."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok


def check_environment(settings: Settings) -> list[Check]:
    from outerloop.harness.needs import children_path, environment_traps, needed_commands
    from outerloop.sandbox import SandboxError, for_run

    try:
        if for_run(settings).kind == "off":
            return [ok("environment", "nothing is confined (sandbox off), nothing to prove")]
    except SandboxError:
        return [ok("environment", "not proved: the sandbox itself is refused (see the "
                                  "sandbox check)")]
    traps = environment_traps(settings)
    if traps:
        return [fail("environment", t.problem(), t.fix) for t in traps]
    names = [n.what for n in needed_commands(settings, children_path())]
    return [ok("environment", f"{', '.join(names)} start inside the sandbox")]
