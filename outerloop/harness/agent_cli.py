"""What the two agent-CLI backends share: settings, the binary, the key, the transcript.

Both backends run a real CLI as a child process under ``run_process_group`` with an
allowlisted environment (``session_env``) holding exactly one model credential. The
key is read from the home's ``keys/`` at the start of every leg, not at startup, so an
operator who fixes a key file fixes the next leg; a key that cannot be read is an
account refusal (``refusal="auth"``): the run ends ``stuck`` and the role cools down
instead of charging the issue's claim cap.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.config import HarnessSettings, Settings
from outerloop.errors import ConfigError, DeploymentError
from outerloop.harness.base import SessionResult
from outerloop.harness.env import session_env
from outerloop.kinds import MODEL_CLIS
from outerloop.private_files import read_key
from outerloop.sandbox import beneath
from outerloop.text import cap

MAX_DETAIL_CHARS = 4_000
VERSION_TIMEOUT_S = 30
DEFAULT_CLAUDE_TOOLS = ("Bash", "Read", "Edit", "Write", "Glob", "Grep")


@dataclass(frozen=True)
class CliSettings:
    """One backend's settings, resolved against the home.

    ``seconds_per_minute`` scales ``SessionLimits.minutes`` (tests use a fraction of a
    second so a walltime test need not wait a minute)."""

    binary: str
    model: str | None
    key_file: Path | None
    base_url: str | None
    allowed_tools: tuple[str, ...] = DEFAULT_CLAUDE_TOOLS
    max_retries: int = 2
    seconds_per_minute: float = 60.0
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings, default_binary: str) -> CliSettings:
        return cls.from_harness(settings, settings.harness, default_binary)

    @classmethod
    def from_harness(cls, settings: Settings, h: HarnessSettings,
                     default_binary: str) -> CliSettings:
        """A seat's harness settings (``fleet.Seat.harness``), paths against the home."""
        return cls(
            binary=h.binary or default_binary,
            model=h.model,
            key_file=settings.path(h.model_key_file) if h.model_key_file else None,
            base_url=h.base_url,
            allowed_tools=tuple(h.allowed_tools) if h.allowed_tools else DEFAULT_CLAUDE_TOOLS,
            max_retries=h.max_retries,
        )


def resolve_binary(binary: str) -> str | None:
    """The executable ``binary`` names (a path, or a name on the session PATH)."""
    if "/" in binary:
        path = Path(binary).expanduser()
        return str(path) if path.is_file() else None
    return shutil.which(binary, path=session_env(Path("/nonexistent")).get("PATH"))


def not_on_node(binary: str) -> str | None:
    """Why the agent CLI ``binary`` cannot start on this node (it is not found where a
    session looks for it), with the fix; None when it is found. A CLI installed on the
    login node only, or a ``[compute] setup`` line that resets ``PATH``, shows here
    before any session: the deployment's to fix, never a verdict on the run."""
    if resolve_binary(binary) is not None:
        return None
    import socket

    where = binary if "/" in binary else \
        f"{binary!r} on PATH {session_env(Path('/nonexistent')).get('PATH')}"
    return (f"the agent CLI is not found on node {socket.gethostname()} ({where}); fix: "
            f"install it on the compute nodes, set [harness] binary to its path on a "
            f"filesystem the nodes share, or put its directory on PATH in [compute] setup")


def binary_version(binary: str) -> str:
    """``<binary> --version``; raises ``ConfigError`` naming the fix when it cannot run."""
    found = resolve_binary(binary)
    if found is None:
        packages = " or ".join(cli.package for cli in MODEL_CLIS.values())
        raise ConfigError(f"agent CLI {binary!r} not found; fix: install it (npm install -g "
                          f"{packages}) or set [harness] binary to its path")
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, env=session_env(Path("/tmp")))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"{found} --version failed ({exc}); fix: reinstall the CLI") from None
    if done.returncode != 0:
        raise ConfigError(f"{found} --version exited {done.returncode}: "
                          f"{cap(done.stderr.strip(), 300)}; fix: reinstall the CLI")
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else "(no version)"


def read_model_key(cli: CliSettings) -> str | SessionResult:
    """The session's model key, or the failure that ends the leg as an account refusal."""
    if cli.key_file is None:
        return SessionResult.failure(
            "no model key: [harness] model_key_file is not set; fix: write the key to "
            "keys/model-key (chmod 600) and set model_key_file = \"keys/model-key\"",
            stop_reason="refused", refusal="auth")
    try:
        return read_key(cli.key_file)
    except ConfigError as exc:
        return SessionResult.failure(f"cannot read the model key: {exc}",
                                     stop_reason="refused", refusal="auth")


def missing_binary(cli: CliSettings, session_id: str | None) -> SessionResult | str:
    """The CLI's path. Missing, it is the deployment's problem, not the session's
    (``not_on_node``): ``DeploymentError``, and the run waits for the fix."""
    found = resolve_binary(cli.binary)
    if found is None:
        raise DeploymentError(not_on_node(cli.binary) or f"agent CLI {cli.binary!r} not found")
    return found


def newest_transcript(home: Path, folder: str, matches: Callable[[str], bool]) -> str | None:
    """The most recently modified regular file under ``home/folder`` whose name
    ``matches`` (a CLI may leave several), found without following any symlink the
    agent planted in its HOME (``sandbox/beneath.py``); None when there is none."""
    try:
        found = [(info.st_mtime, rel) for rel, info in beneath.walk_files(home, folder)
                 if stat.S_ISREG(info.st_mode) and matches(rel.rsplit("/", 1)[-1])]
    except OSError:
        return None
    return str(home / max(found)[1]) if found else None


def detail(text: str) -> str:
    return cap(text.strip(), MAX_DETAIL_CHARS, keep="tail")
