"""Harnesses: how one agent session (a leg) is run.

The seam is ``Harness.run(prompt, workspace, home, resume, limits) -> SessionResult``
(``harness/base.py``). It never raises: every failure is a result with
``is_error=True`` so the kernel can always record the leg and decide. Backends: the
scripted agent (``scripted.py``, no model, used by tests and the demo) and the agent
CLIs. Every backend runs its session with ``env.session_env`` (an allowlist: no forge
token, no stray secrets) under ``env.run_process_group`` (the whole process group dies
with the session).
"""

from outerloop.harness.base import (
    ERROR_STOPS,
    STOP_REASONS,
    Harness,
    SessionLimits,
    SessionResult,
    StopReason,
)

__all__ = [
    "ERROR_STOPS",
    "STOP_REASONS",
    "Harness",
    "SessionLimits",
    "SessionResult",
    "StopReason",
]
