"""Operator settings: ``outerloop.toml`` in the home, ``OUTERLOOP_*`` overrides.

Precedence: command-line flag > environment ``OUTERLOOP_*`` > ``outerloop.toml`` >
default. This is the only module that reads the process environment; everything
else asks it (``environ()``, ``load_settings()``).

Environment overrides are ``OUTERLOOP_<SECTION>_<FIELD>`` (``OUTERLOOP_FORGE_KIND=github``,
``OUTERLOOP_LIMITS_STALE_DAYS=7``) plus ``OUTERLOOP_HOME`` and ``OUTERLOOP_LEDGER_REMOTE``.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from outerloop.errors import ConfigError

CONFIG_FILE = "outerloop.toml"
ENV_PREFIX = "OUTERLOOP_"
REPO_RE = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ForgeSettings(_Section):
    kind: Literal["local", "github"] = "local"
    login: str = Field(default="outerloop", description="the kernel's own login")
    former_logins: list[str] = Field(default_factory=list)
    api_url: str = "https://api.github.com"
    token_file: str = "keys/forge-token"
    min_rate_remaining: int = Field(default=200, ge=0)


class ComputeSettings(_Section):
    kind: Literal["local", "slurm"] = "local"
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    eval_qos: str | None = None
    launch_nice: int = Field(default=100, ge=0)
    command_timeout_s: int = Field(default=30, ge=1)


class HarnessSettings(_Section):
    kind: Literal["scripted", "claude", "codex"] = "scripted"
    script: str | None = Field(default=None, description="scripted: path to the YAML script")
    binary: str | None = None
    model: str | None = None
    model_key_file: str | None = None
    base_url: str | None = None
    allowed_tools: list[str] = Field(default_factory=list, description="claude: tools the "
                                     "agent may use unasked (empty: the built-in set)")
    max_retries: int = Field(default=2, ge=0, description="API retries inside one leg")


class CadenceSettings(_Section):
    tick_minutes: int = Field(default=10, ge=1)
    tick_timeout_s: int = Field(default=600, ge=10)


class LimitsSettings(_Section):
    max_new_runs_per_tick: int = Field(default=1, ge=0)
    max_active_attempts: int = Field(default=4, ge=1, description="operator ceiling")
    grace_minutes: int = Field(default=15, ge=0)
    stale_days: int = Field(default=14, ge=1)
    max_claims_per_issue: int = Field(default=3, ge=1)


class SandboxSettings(_Section):
    """The trust boundary around agent-written code (``outerloop/sandbox/``)."""

    kind: Literal["auto", "landlock", "bwrap", "off"] = Field(
        default="auto", description="auto: landlock, else bwrap; off: unconfined (loud)")
    read_only: list[str] = Field(default_factory=list, description="absolute paths sandboxed "
                                 "processes may read (datasets, model caches, toolchains)")
    read_write: list[str] = Field(default_factory=list, description="absolute paths they may "
                                  "also write (a shared uv/pip cache)")
    allow_model_harness_off: bool = Field(default=False, description="with kind = \"off\", "
                                          "let a model harness (claude, codex) run unconfined")


class TargetSettings(_Section):
    repo: str = Field(pattern=REPO_RE)
    self_initiated: bool = Field(default=False, description="not supported by this version; "
                                 "ignored (runs start only from issues)")


class Settings(_Section):
    home: Path
    forge: ForgeSettings = Field(default_factory=ForgeSettings)
    compute: ComputeSettings = Field(default_factory=ComputeSettings)
    harness: HarnessSettings = Field(default_factory=HarnessSettings)
    cadence: CadenceSettings = Field(default_factory=CadenceSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    targets: list[TargetSettings] = Field(default_factory=list)
    ledger_remote: str | None = None

    @field_validator("targets")
    @classmethod
    def _unique_targets(cls, value: list[TargetSettings]) -> list[TargetSettings]:
        repos = [t.repo for t in value]
        if len(set(repos)) != len(repos):
            raise ValueError("each target repo may be listed once")
        return value

    def path(self, relative: str) -> Path:
        """A home-relative setting (``keys/forge-token``) as an absolute path."""
        candidate = Path(relative).expanduser()
        return candidate if candidate.is_absolute() else self.home / candidate


_SECTIONS: dict[str, type[_Section]] = {
    "forge": ForgeSettings,
    "compute": ComputeSettings,
    "harness": HarnessSettings,
    "cadence": CadenceSettings,
    "limits": LimitsSettings,
    "sandbox": SandboxSettings,
}


def settings_sections() -> dict[str, type[BaseModel]]:
    """The ``outerloop.toml`` sections and their models (``outerloop help settings``)."""
    return dict(_SECTIONS)


def environ() -> dict[str, str]:
    """A copy of the process environment (the one sanctioned read of it)."""
    return dict(os.environ)


def env_value(name: str) -> str | None:
    return os.environ.get(name)


def home_path(flag: str | Path | None = None) -> Path:
    """The home: ``--home`` flag > ``OUTERLOOP_HOME`` > ``~/.outerloop``."""
    raw = str(flag) if flag else os.environ.get(ENV_PREFIX + "HOME") or "~/.outerloop"
    return Path(raw).expanduser().resolve()


def check_home_permissions(home: Path) -> None:
    """Refuse a home others may write to: they could plant ledger lines or keys."""
    mode = home.stat().st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(
            f"home {home} is group/world-writable (mode {stat.S_IMODE(mode):o}); "
            f"fix: chmod go-w {home}"
        )


def read_key(path: Path) -> str:
    """A secret from ``keys/``: must be a regular file, 0600, owned by us."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"key file {path} does not exist; fix: write the secret there "
                          f"and chmod 600 {path}") from None
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ConfigError(
            f"key file {path} has mode {stat.S_IMODE(info.st_mode):o}; fix: chmod 600 {path}"
        )
    if info.st_uid != os.getuid():
        raise ConfigError(f"key file {path} is not owned by you; fix: chown $USER {path}")
    return path.read_text(encoding="utf-8").strip()


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """``OUTERLOOP_FORGE_KIND=github`` -> ``{"forge": {"kind": "github"}}``."""
    out: dict[str, Any] = {}
    for section, model in _SECTIONS.items():
        for field in model.model_fields:
            name = f"{ENV_PREFIX}{section.upper()}_{field.upper()}"
            if name in env:
                out.setdefault(section, {})[field] = env[name]
    if ENV_PREFIX + "LEDGER_REMOTE" in env:
        out["ledger_remote"] = env[ENV_PREFIX + "LEDGER_REMOTE"]
    return out


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe(exc: ValidationError, source: str, from_env: Mapping[str, Any] | None = None,
              from_flags: Mapping[str, Any] | None = None) -> str:
    """Each problem blamed on where its value came from: a flag, an ``OUTERLOOP_*``
    variable, or the file ``source``."""
    parts = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        where = ".".join(loc) or "(top)"
        if _holds(from_flags, loc):
            origin = "the command-line flag"
        elif _holds(from_env, loc):
            origin = f"the environment variable {ENV_PREFIX}{'_'.join(loc[:2]).upper()}"
        else:
            origin = source
        parts.append(f"{origin}: {where}: {error['msg']}")
    return "; ".join(parts)


def _holds(values: Mapping[str, Any] | None, loc: list[str]) -> bool:
    node: Any = values or {}
    for part in loc[:2]:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return bool(loc)


def read_file_settings(home: Path) -> dict[str, Any]:
    path = home / CONFIG_FILE
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file") from None


def load_settings(
    home: str | Path | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    require_home: bool = True,
) -> Settings:
    """Settings with the documented precedence. ``flags`` is nested like the file
    (``{"forge": {"kind": "github"}}``); None values are ignored."""
    root = home_path(home)
    if require_home:
        if not root.is_dir():
            raise ConfigError(f"no home at {root}; fix: run `outerloop init` "
                              f"(or set OUTERLOOP_HOME / --home)")
        check_home_permissions(root)
    data = read_file_settings(root) if root.is_dir() else {}
    from_env = _env_overrides(os.environ)
    from_flags = _drop_none(flags or {})
    data = _merge(_merge(data, from_env), from_flags)
    data["home"] = root
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, str(root / CONFIG_FILE), from_env, from_flags)
                          + "; fix the setting") from None


def _drop_none(flags: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flags.items():
        if isinstance(value, Mapping):
            inner = _drop_none(value)
            if inner:
                out[key] = inner
        elif value is not None:
            out[key] = value
    return out
