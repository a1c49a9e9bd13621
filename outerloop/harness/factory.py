"""Pick the harness a seat names (``fleet.py``): one registry, chosen by kind.

Errors are found here, before any run starts: a scripted harness without a script, or
an unknown backend, is a ``ConfigError`` naming the setting and the fix. The agent CLIs'
binary and key are checked per leg (a leg that cannot start ends with a result), and
up front by ``outerloop doctor``. Every seat (a target's agent slot, ``[harness]``, the
judges') goes through ``make_harness``: no caller builds a backend itself.
"""

from __future__ import annotations

from pathlib import Path

from outerloop.config import Settings
from outerloop.errors import ConfigError
from outerloop.fleet import Seat, home_seat, judge_seat
from outerloop.harness.base import Harness
from outerloop.kinds import MODEL_CLIS, HarnessKind, unknown


def make_harness(settings: Settings, seat: Seat | None = None,
                 deps: Path | None = None) -> Harness:
    """The harness of ``seat`` (default: ``[harness]`` as it resolves on its own).
    A scripted seat's script is resolved against the home when relative. Every harness
    runs its sessions confined (``outerloop.sandbox``), reading ``deps`` (the target's
    dependency cache) when given. Raises ``ConfigError`` when the script is unset or
    missing, the backend is not available, or no sandbox may confine it
    (``SandboxError``)."""
    if seat is None:
        seat = home_seat(settings)
    harness = seat.harness
    kind = harness.kind
    from outerloop.sandbox import for_run

    confinement = for_run(settings, kind).with_deps(deps)
    if kind == "scripted":
        from outerloop.harness.scripted import ScriptedHarness

        if not harness.script:
            raise ConfigError(
                "[harness] script is not set but [harness] kind = \"scripted\" needs one; "
                "fix: set script = \"path/to/script.yaml\" (relative to the home) in "
                "outerloop.toml, or OUTERLOOP_HARNESS_SCRIPT"
            )
        script = settings.path(harness.script)
        if not script.is_file():
            raise ConfigError(
                f"[harness] script {script} does not exist; fix: write the script there "
                f"(see docs/scripted-agent.md) or point [harness] script at one"
            )
        return ScriptedHarness(script, confinement=confinement)
    from outerloop.harness.agent_cli import CliSettings

    match kind:
        case "claude":
            from outerloop.harness.claude import ClaudeHarness

            return ClaudeHarness(CliSettings.from_harness(settings, harness,
                                                          MODEL_CLIS[kind].binary), confinement)
        case "codex":
            from outerloop.harness.codex import CodexHarness

            return CodexHarness(CliSettings.from_harness(settings, harness,
                                                         MODEL_CLIS[kind].binary), confinement)
        case _:
            unknown("[harness] kind", kind, HarnessKind)


def make_judge_harness(settings: Settings) -> Harness:
    """The review panel's harness: the judges' seat (``fleet.judge_seat``: ``[review]
    kind``, ``model``, ``endpoint``, ``script``) through the same registry, and so the
    same session-spawning path, as the agents' legs. Raises ``ConfigError`` like
    ``make_harness``."""
    return make_harness(settings, judge_seat(settings))
