"""Pick the harness the settings name.

Errors are found here, before any run starts: a scripted harness without a script, or
an unknown backend, is a ``ConfigError`` naming the setting and the fix. The agent CLIs'
binary and key are checked per leg (a leg that cannot start ends with a result), and
up front by ``outerloop doctor``.
"""

from __future__ import annotations

from pathlib import Path

from outerloop.config import Settings
from outerloop.errors import ConfigError
from outerloop.harness.base import Harness
from outerloop.kinds import MODEL_CLIS, HarnessKind, unknown


def make_harness(settings: Settings, deps: Path | None = None) -> Harness:
    """The configured harness. ``[harness] script`` is resolved against the home when
    relative. Every harness runs its sessions confined (``outerloop.sandbox``), reading
    ``deps`` (the target's dependency cache) when given.
    Raises ``ConfigError`` when the script is unset or missing, the backend is not
    available, or no sandbox may confine it (``SandboxError``)."""
    kind = settings.harness.kind
    from outerloop.sandbox import for_run

    confinement = for_run(settings, kind).with_deps(deps)
    if kind == "scripted":
        from outerloop.harness.scripted import ScriptedHarness

        if not settings.harness.script:
            raise ConfigError(
                "[harness] script is not set but [harness] kind = \"scripted\" needs one; "
                "fix: set script = \"path/to/script.yaml\" (relative to the home) in "
                "outerloop.toml, or OUTERLOOP_HARNESS_SCRIPT"
            )
        script = settings.path(settings.harness.script)
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

            return ClaudeHarness(CliSettings.from_settings(settings, MODEL_CLIS[kind].binary),
                                 confinement)
        case "codex":
            from outerloop.harness.codex import CodexHarness

            return CodexHarness(CliSettings.from_settings(settings, MODEL_CLIS[kind].binary),
                                confinement)
        case _:
            unknown("[harness] kind", kind, HarnessKind)


def make_judge_harness(settings: Settings) -> Harness:
    """The review panel's harness: ``[review] kind`` (default: the agents' kind), with
    ``[review] script`` for a scripted judge. The same backends, and so the same
    session-spawning path, as the agents' legs. Raises ``ConfigError`` like
    ``make_harness``."""
    review = settings.review
    kind = review.kind or settings.harness.kind
    if kind == "scripted":
        if not review.script:
            raise ConfigError(
                "[review] script is not set but the judges are scripted; fix: set "
                "[review] script = \"path/to/judge.yaml\" (see examples/agents/"
                "judge-approve.yaml), or [review] kind = \"claude\" or \"codex\"")
        judged = settings.model_copy(update={"harness": settings.harness.model_copy(
            update={"kind": "scripted", "script": review.script})})
        return make_harness(judged)
    if kind != settings.harness.kind:
        raise ConfigError(
            f"[review] kind = {kind!r} but the agents run {settings.harness.kind!r}: a model "
            f"judge uses the [harness] binary, model and key, so it must be the same "
            f"backend; fix: set [review] kind = {settings.harness.kind!r} or \"scripted\"")
    return make_harness(settings)
