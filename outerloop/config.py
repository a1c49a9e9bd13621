"""Operator settings: ``outerloop.toml`` in the home, ``OUTERLOOP_*`` overrides.

Precedence: command-line flag > environment ``OUTERLOOP_*`` > ``outerloop.toml`` >
default. This is the only module that reads the process environment; everything
else asks it (``environ()``, ``load_settings()``).

Environment overrides are ``OUTERLOOP_<SECTION>_<FIELD>`` (``OUTERLOOP_FORGE_KIND=github``,
``OUTERLOOP_LIMITS_STALE_DAYS=7``) plus ``OUTERLOOP_HOME`` and ``OUTERLOOP_LEDGER_REMOTE``.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from outerloop.errors import ConfigError
from outerloop.fleet_settings import EndpointSettings, check_fleet
from outerloop.private_files import check_home_permissions
from outerloop.settings_sections import (
    REPO_RE,
    ArchiveSettings,
    CadenceSettings,
    ComputeSettings,
    DepsSettings,
    ForgeSettings,
    HarnessSettings,
    LimitsSettings,
    ReviewSettings,
    SandboxSettings,
    TargetSettings,
    _Section,
)
from outerloop.settings_snapshot import SNAPSHOT_VAR

__all__ = [
    "CLOCK_OFFSET_VAR",
    "CONFIG_FILE",
    "ENV_PREFIX",
    "REPO_RE",
    "SETTINGS_MODULES",
    "ArchiveSettings",
    "CadenceSettings",
    "ComputeSettings",
    "DepsSettings",
    "ForgeSettings",
    "HarnessSettings",
    "LimitsSettings",
    "ReviewSettings",
    "SandboxSettings",
    "Settings",
    "TargetSettings",
    "clock_offset_s",
    "durable",
    "env_value",
    "environ",
    "home_path",
    "load_settings",
    "override_variables",
    "read_file_settings",
    "settings_sections",
]
"""The section models live in ``settings_sections``; they are named from here too, so
a caller imports its settings from one module."""

CONFIG_FILE = "outerloop.toml"
ENV_PREFIX = "OUTERLOOP_"
BENCH_SKIP_DURABILITY_ENV = ENV_PREFIX + "BENCH_SKIP_DURABILITY"
"""Set to ``1`` by ``bench/durability.py`` only, to measure what durability costs: the
ledger git's fsyncs (``ledger/gitrepo.py``) and the local forge's ``synchronous=FULL``
(``forge/localdb.py``) are then skipped. Each ledger line's fsync and the directory
fsync of a new ledger file (``atomic.py``, below this layer) are kept: the bench times
the latter on its own. Never set it on a real home."""


def durable() -> bool:
    """Whether the fsyncs that guard against a machine crash are made: always, but for
    the durability bench's "before" figures. Read on each call (the bench flips it)."""
    return os.environ.get(BENCH_SKIP_DURABILITY_ENV) != "1"


class Settings(_Section):
    home: Path
    forge: ForgeSettings = Field(default_factory=ForgeSettings)
    compute: ComputeSettings = Field(default_factory=ComputeSettings)
    harness: HarnessSettings = Field(default_factory=HarnessSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    cadence: CadenceSettings = Field(default_factory=CadenceSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    archive: ArchiveSettings = Field(default_factory=ArchiveSettings)
    deps: DepsSettings = Field(default_factory=DepsSettings)
    endpoints: dict[str, EndpointSettings] = Field(default_factory=dict)
    targets: list[TargetSettings] = Field(default_factory=list)
    ledger_remote: str | None = None

    @model_validator(mode="after")
    def _fleet_holds(self) -> Settings:
        slots = [(f"targets.{i}.agents.{j}", slot) for i, target in enumerate(self.targets)
                 for j, slot in enumerate(target.agents)]
        check_fleet(self.endpoints, self.harness.kind, slots, [
            ("harness.endpoint", self.harness.endpoint),
            ("review.endpoint", self.review.endpoint)])
        return self

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
    "review": ReviewSettings,
    "cadence": CadenceSettings,
    "limits": LimitsSettings,
    "sandbox": SandboxSettings,
    "archive": ArchiveSettings,
    "deps": DepsSettings,
}


def settings_sections() -> dict[str, type[BaseModel]]:
    """The ``outerloop.toml`` sections and their models (``outerloop help settings``)."""
    return dict(_SECTIONS)


def environ() -> dict[str, str]:
    """A copy of the process environment (the one sanctioned read of it)."""
    return dict(os.environ)


def replace_environ(env: dict[str, str]) -> None:
    """Make ``env`` this process's whole environment: a forked child becoming a job
    (``compute/local_fork.py``) keeps nothing of its parent's."""
    os.environ.clear()
    os.environ.update(env)


def env_value(name: str) -> str | None:
    return os.environ.get(name)


CLOCK_OFFSET_VAR = ENV_PREFIX + "CLOCK_OFFSET_S"
"""Test hook: seconds an ``outerloop tick`` process's clock is off (``clock.shift``)."""


def clock_offset_s() -> float:
    """``OUTERLOOP_CLOCK_OFFSET_S`` as seconds (unset or empty: 0). Tests set it to play
    a tick host whose clock is wrong; nothing an operator sets."""
    raw = os.environ.get(CLOCK_OFFSET_VAR, "").strip()
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        raise ConfigError(f"{CLOCK_OFFSET_VAR}={raw!r} is not a number of seconds; "
                          f"fix: unset it (it is a test hook) or give seconds") from None


def home_path(flag: str | Path | None = None) -> Path:
    """The home: ``--home`` flag > ``OUTERLOOP_HOME`` > ``~/.outerloop``."""
    raw = str(flag) if flag else os.environ.get(ENV_PREFIX + "HOME") or "~/.outerloop"
    return Path(raw).expanduser().resolve()


def _env_value(raw: str, annotation: Any) -> Any:
    """A list setting from the environment: JSON (``["a", "b"]``) or ``a,b``."""
    if "list" not in str(annotation):
        return raw
    text = raw.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            return raw
    return [part.strip() for part in text.split(",") if part.strip()]


def _model_overrides(env: Mapping[str, str], prefix: str,
                     model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, info in model.model_fields.items():
        name = f"{prefix}_{field.upper()}"
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            inner = _model_overrides(env, name, annotation)
            if inner:
                out[field] = inner
        elif name in env:
            out[field] = _env_value(env[name], annotation)
    return out


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """``OUTERLOOP_FORGE_KIND=github`` -> ``{"forge": {"kind": "github"}}``; placement
    sections nest (``OUTERLOOP_COMPUTE_EVAL_PARTITION``); lists are JSON or ``a,b``."""
    out: dict[str, Any] = {}
    for section, model in _SECTIONS.items():
        values = _model_overrides(env, f"{ENV_PREFIX}{section.upper()}", model)
        if values:
            out[section] = values
    if ENV_PREFIX + "LEDGER_REMOTE" in env:
        out["ledger_remote"] = env[ENV_PREFIX + "LEDGER_REMOTE"]
    return out


def override_variables(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``OUTERLOOP_<SECTION>_<FIELD>`` variables (and ``OUTERLOOP_LEDGER_REMOTE``)
    set in ``env`` (default: this process): what the resident chain carries over."""
    env = os.environ if env is None else env
    sections = tuple(f"{ENV_PREFIX}{s.upper()}_" for s in _SECTIONS)
    return {k: v for k, v in env.items()
            if k.startswith(sections) or k == ENV_PREFIX + "LEDGER_REMOTE"}


def _snapshot(root: Path) -> dict[str, Any] | None:
    """The snapshot a job was given (``OUTERLOOP_SETTINGS_SNAPSHOT``), if it is of
    this home; None otherwise (then the file and the environment are read)."""
    named = os.environ.get(SNAPSHOT_VAR)
    if not named:
        return None
    try:
        data = json.loads(Path(named).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{SNAPSHOT_VAR}={named}: cannot read the settings snapshot "
                          f"({exc}); fix: unset it, or resubmit the job") from None
    if not isinstance(data, dict) or Path(str(data.get("home"))).resolve() != root:
        return None
    return data


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
    snapshot = _snapshot(root)
    from_env = _env_overrides(os.environ) if snapshot is None else {}
    from_flags = _drop_none(flags or {})
    if snapshot is None:
        data = _merge(read_file_settings(root) if root.is_dir() else {}, from_env)
    else:
        data = snapshot
    data = _merge(data, from_flags)
    data["home"] = root
    try:
        if not root.is_dir():
            return Settings.model_validate(data)
        from outerloop.validated import kept

        source = json.dumps(data, sort_keys=True, default=_typed).encode()
        return kept(root, "settings", source, SETTINGS_MODULES, Settings,
                    lambda: Settings.model_validate(data))
    except ValidationError as exc:
        raise ConfigError(_describe(exc, str(root / CONFIG_FILE), from_env, from_flags)
                          + "; fix the setting") from None


SETTINGS_MODULES = ("outerloop.config", "outerloop.settings_sections",
                    "outerloop.fleet_settings", "outerloop.kinds",
                    "outerloop.atomic",
                    "outerloop.private_files", "outerloop.errors",
                    "outerloop.settings_snapshot")
"""Where the settings' models and validators live: their sources key the validated
settings kept under the home (``validated.py``)."""


def _typed(value: object) -> str:
    """A value JSON has no type for (a path, a TOML date), keyed with its type: a date
    and the text it prints as validate differently."""
    return f"{type(value).__qualname__}:{value!r}"


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
