"""Build the configured forge from settings: the one place that picks a backend."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.errors import ConfigError
from outerloop.forge.base import Forge
from outerloop.forge.local import LocalForge


def local_forge(settings: Settings) -> LocalForge:
    """The home's local forge (``<home>/forge``), acting as the kernel's login."""
    return LocalForge(settings.home / "forge", settings.forge.login)


def make_forge(settings: Settings) -> Forge:
    """The forge ``settings.forge.kind`` names. ``ConfigError`` for a kind that is not
    built yet, naming the setting to change."""
    if settings.forge.kind == "local":
        return local_forge(settings)
    raise ConfigError(
        f"forge kind {settings.forge.kind} is not built yet; fix: set [forge] kind = "
        f"\"local\" in {settings.home / 'outerloop.toml'}"
    )
