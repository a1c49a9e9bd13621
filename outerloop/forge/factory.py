"""Build the configured forge from settings: the one place that picks a backend."""

from __future__ import annotations

from urllib.parse import urlsplit

from outerloop.config import Settings
from outerloop.forge.base import Forge
from outerloop.forge.local import LocalForge
from outerloop.kinds import ForgeKind, unknown
from outerloop.private_files import read_key

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
ETAG_CACHE_DIR = "forge-cache"
"""Where the GitHub forge keeps its ETags, apart from ``cache/`` (the fold's, documented
as deletable): losing the ETags makes every conditional request of the next tick a full
one that costs rate limit, so an operator clearing ``cache/`` must not lose them."""


def local_forge(settings: Settings) -> LocalForge:
    """The home's local forge (``<home>/forge``), acting as the kernel's login."""
    return LocalForge(settings.home / "forge", settings.forge.login)


def github_forge(settings: Settings, secrets: list[str] | None = None) -> Forge:
    """The GitHub forge at ``[forge] api_url`` with the credential in ``token_file``
    (a 0600 file; ``ConfigError`` naming the fix otherwise). Every token it holds is
    appended to ``secrets`` so callers can redact it. ETags are cached under
    ``<home>/forge-cache`` (``ETAG_CACHE_DIR``). A loopback API (a test server) gets no
    write pacing."""
    from outerloop.forge.github import SECONDS_BETWEEN_WRITES, GitHubForge, load_auth

    held = secrets if secrets is not None else []
    auth = load_auth(read_key(settings.path(settings.forge.token_file)), held.append)
    loopback = urlsplit(settings.forge.api_url).hostname in LOOPBACK_HOSTS
    return GitHubForge(
        settings.forge.api_url, settings.forge.login, auth,
        former_logins=settings.forge.former_logins,
        min_rate_remaining=settings.forge.min_rate_remaining,
        cache_dir=settings.home / ETAG_CACHE_DIR, secrets=held,
        seconds_between_writes=None if loopback else SECONDS_BETWEEN_WRITES,
    )


def make_forge(settings: Settings, secrets: list[str] | None = None) -> Forge:
    """The forge ``settings.forge.kind`` names; ``secrets`` collects its tokens. mypy
    checks every name of ``kinds.ForgeKind`` has a branch here."""
    kind = settings.forge.kind
    match kind:
        case "github":
            return github_forge(settings, secrets)
        case "local":
            return local_forge(settings)
        case _:
            unknown("[forge] kind", kind, ForgeKind)
