"""The trust boundary: agent-written code runs confined (see ``docs/security.md``).

``sandboxed(settings, argv, env, workdir=, scratch=)`` is the one call that runs any
child sandboxed (a review session, a new harness). ``for_run(settings)`` gives the
``Confinement`` of a home's children; its
``command(argv, env, workdir=, scratch=)`` runs any child sandboxed (sessions of
every harness, review sessions) and ``shell(command, scratch)`` wraps a job's
command (launches, evals). ``off_warning(settings)`` is the loud note shown while
agent code runs unconfined.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from outerloop.sandbox.base import Grants, Kind, Sandbox, SandboxError
    from outerloop.sandbox.confine import Confinement, for_run, sandboxed, scratch_tmp
    from outerloop.sandbox.policy import install_dir
    from outerloop.sandbox.resolve import off_warning

__all__ = ["Confinement", "Grants", "Kind", "Sandbox", "SandboxError", "for_run", "install_dir",
           "off_warning", "sandboxed", "scratch_tmp"]

_HOME_OF = {"Grants": "base", "Kind": "base", "Sandbox": "base", "SandboxError": "base",
            "Confinement": "confine", "for_run": "confine", "sandboxed": "confine",
            "scratch_tmp": "confine", "install_dir": "policy", "off_warning": "resolve"}
"""Each name's module, imported when the name is first asked for: a quiet tick asks only
for ``off_warning`` and does not pay for building confinements (``confine``)."""


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
