"""The trust boundary: agent-written code runs confined (see ``docs/security.md``).

``sandboxed(settings, argv, env, workdir=, scratch=)`` is the one call that runs any
child sandboxed (a review session, a new harness). ``for_run(settings)`` gives the
``Confinement`` of a home's children; its
``command(argv, env, workdir=, scratch=)`` runs any child sandboxed (sessions of
every harness, review sessions) and ``shell(command, scratch)`` wraps a job's
command (launches, evals). ``off_warning(settings)`` is the loud note shown while
agent code runs unconfined.
"""

from outerloop.sandbox.base import Grants, Kind, Sandbox, SandboxError
from outerloop.sandbox.confine import Confinement, for_run, sandboxed, scratch_tmp
from outerloop.sandbox.policy import install_dir
from outerloop.sandbox.resolve import off_warning

__all__ = ["Confinement", "Grants", "Kind", "Sandbox", "SandboxError", "for_run", "install_dir",
           "off_warning", "sandboxed", "scratch_tmp"]
