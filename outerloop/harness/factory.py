"""Pick the harness the settings name.

Errors are found here, before any run starts: a scripted harness without a script, or
a backend not built yet, is a ``ConfigError`` naming the setting and the fix.
"""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.errors import ConfigError
from outerloop.harness.base import Harness


def make_harness(settings: Settings) -> Harness:
    """The configured harness. ``[harness] script`` is resolved against the home when
    relative. Raises ``ConfigError`` when the script is unset or missing, or the
    backend is not available."""
    kind = settings.harness.kind
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
        return ScriptedHarness(script)
    raise ConfigError(
        f"[harness] kind = {kind!r}: that backend is not built yet; fix: set "
        f"[harness] kind = \"scripted\""
    )
