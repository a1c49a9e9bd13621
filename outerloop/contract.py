"""The target contract: ``.outerloop.yaml`` — its model, strict loader and invariants.

A contract is written by a target's maintainers and is therefore **untrusted**: it is
parsed strictly (size cap, no duplicate keys, no aliases, unknown fields refused),
every knob that costs compute is clamped later by ``limits.py``, and the paths a run
may never write (``.github/``, any ``.git`` component, the contract itself, the
roadmap) are fixed here in code, so no contract can widen them away.

Every problem becomes one line ``<field path>: <what is wrong>`` (for example
``benchmarks[1].direction: must be 'min' or 'max'``) and all of them are reported
together, so a maintainer fixes the file in one pass. A bad contract raises
``ContractInvalid`` (a ``ContractError``); the tick skips that target, it never
crashes.

``python -m outerloop.contract --schema`` prints the JSON schema committed as
``contracts/outerloop.schema.json``.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from outerloop.contract_paths import (
    CONTRACT_FILE as CONTRACT_FILE,
)
from outerloop.contract_paths import (
    check_eval_path,
    check_roadmap,
    check_scope_prefix,
    fold_component,
    is_under,
    split_repo_path,
)
from outerloop.contract_reference import (
    Guidance,
    Regression,
    RegressionAllowance,
    ResearchLines,
    Suite,
    SuiteAggregate,
    guidance_mode,
)
from outerloop.errors import ContractError

MAX_CONTRACT_BYTES = 64 * 1024
MAX_BENCHMARKS = 64
MAX_COMMAND_CHARS = 2_000
MAX_METRIC_CHARS = 128
DEFAULT_EVAL_MINUTES = 60
DEFAULT_DEPTH_K = 10
DEFAULT_SLEEP_K = 20

NAME_RE = r"^[A-Za-z0-9_.-]{1,64}$"
SEED_ENV_RE = r"^[A-Z][A-Z0-9_]{0,63}$"

MANAGED_ENV_NAMES = frozenset({
    "HOME", "PATH", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "USER", "LOGNAME",
    "SHELL", "TERM", "PWD", "OLDPWD", "TZ", "IFS", "PYTHONPATH", "PYTHONHOME",
    "PYTHONSTARTUP", "CUDA_VISIBLE_DEVICES",
})
MANAGED_ENV_PREFIXES = (
    "UV_", "LD_", "GIT_", "OUTERLOOP_", "SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "LC_",
)

def _not_bool(value: Any) -> Any:
    """YAML ``yes``/``true`` must not slip into a number field as 1."""
    if isinstance(value, bool):
        raise PydanticCustomError("number_type", "must be a number, not true/false")
    return value


ScopePrefix = Annotated[str, AfterValidator(check_scope_prefix)]
RepoPath = Annotated[str, AfterValidator(check_roadmap)]
EvalPath = Annotated[str, AfterValidator(check_eval_path)]
Int = Annotated[int, BeforeValidator(_not_bool)]
Float = Annotated[float, BeforeValidator(_not_bool)]
Bool = Annotated[bool, Field(strict=True)]


# --------------------------------------------------------------------------- models


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class Benchmark(_Model):
    """One named command whose JSON output carries ``metric``, better in ``direction``."""

    name: str = Field(pattern=NAME_RE, description="unique; issues name it")
    command: str = Field(min_length=1, max_length=MAX_COMMAND_CHARS,
                         description="run from the repository root; read from the base tree")
    metric: str = Field(min_length=1, max_length=MAX_METRIC_CHARS,
                        description="key of the last JSON object line on stdout")
    direction: Literal["min", "max"]
    seed_env: str | None = Field(default=None, pattern=SEED_ENV_RE,
                                 description="environment variable that receives the seed")
    min_delta: Float = Field(default=0.0, ge=0, description="absolute noise floor")
    min_delta_rel: Float = Field(default=0.0, ge=0, le=1,
                                 description="floor relative to |baseline|")
    eval_minutes: Int = Field(default=DEFAULT_EVAL_MINUTES, ge=1,
                              description="eval job time limit; clamped to 1440")
    gpus: Int = Field(default=0, ge=0, le=8)
    nodes: Int = Field(default=1, ge=1, le=64)
    baseline: Literal["paired", "cached"] = "paired"
    depth_k: Int | None = Field(default=None, ge=0, le=16,
                                description="launch budget; default budgets.depth_k")
    sleep_k: Int | None = Field(default=None, ge=1, le=32,
                                description="sleep budget; default budgets.sleep_k")
    display_digits: Int | None = Field(default=None, ge=2, le=12)
    scale: Literal["linear", "log10", "ln"] = Field(
        default="linear", description="what the metric is: a plain number (linear), or "
        "the base-10 or natural logarithm of one (a log error, a log-likelihood); a PR "
        "states a log metric's change as the factor on the number it is the log of")
    verification: Literal["gate", "self_report"] = "gate"
    self_report: Bool = Field(default=False, description="shorthand for verification: self_report")
    repeats: Int = Field(default=1, ge=1, le=9, description="seeds at the gate's first "
                         "look, each a couple of two eval pairs (at least 3 are measured)")
    confidence: Float = Field(default=0.99, ge=0.5, le=0.9999, description="the gate's "
                              "confidence over a whole run: a candidate with no true gain "
                              "is credited at most 1 - confidence of the time")
    max_pairs: Int = Field(default=12, ge=3, le=48, description="the most seeds one "
                           "submission gets, each a couple of two eval pairs (the "
                           "sequential test's last look)")
    score: str | None = Field(default=None, min_length=1, max_length=MAX_COMMAND_CHARS,
                              description="the trusted scorer: run from the root of a "
                              "fresh base checkout after command, in its own sandboxed "
                              "process that alone reads eval_only; reads the outputs at "
                              "$OUTERLOOP_OUTPUTS and prints the metric line")
    outputs: EvalPath | None = Field(default=None, description="the file or directory "
                                     "command writes (repo-relative) for score to read")
    eval_only: list[EvalPath] = Field(default_factory=list, description="repository paths "
                                      "(files or directories) only score reads: withheld "
                                      "from sessions, launches and command")
    regression: Regression = Field(
        default=False, description="a guard: every candidate, whatever it climbs, is "
        "re-measured on this benchmark too (base and candidate, same hidden seeds), and "
        "one that makes it worse by more than its floor is not credited "
        "(suite-regression); a mapping (free_rel, max_rel, requires_gain_rel, or free, "
        "max, requires_gain) makes it a guard with that allowance")
    lines: ResearchLines | None = Field(default=None, description="each agent slot works "
                                        "on its own research line for this benchmark "
                                        "(true); a workflow dial, nothing measured changes")

    @field_validator("seed_env")
    @classmethod
    def _unmanaged(cls, value: str | None) -> str | None:
        if value is not None and (value in MANAGED_ENV_NAMES
                                  or value.startswith(MANAGED_ENV_PREFIXES)):
            raise PydanticCustomError(
                "managed_env", "{name} is managed by outerloop or the scheduler; "
                "pick a name of your own (e.g. MYBENCH_SEED)", {"name": value})
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Benchmark:
        if self.self_report and self.verification == "gate" and "verification" in (
            self.model_fields_set
        ):
            raise PydanticCustomError("conflict", "{detail}", {
                "at": "self_report",
                "detail": "contradicts verification: gate; set only one of them"})
        if self.score is not None and self.outputs is None:
            raise PydanticCustomError("conflict", "{detail}", {
                "at": "outputs",
                "detail": "score needs outputs: the path command writes for the scorer"})
        if self.score is None and (self.outputs is not None or self.eval_only):
            raise PydanticCustomError("conflict", "{detail}", {
                "at": "score" if self.outputs is not None else "eval_only",
                "detail": "outputs and eval_only need a score command (the trusted scorer)"})
        if self.max_pairs < self.repeats:
            raise PydanticCustomError("conflict", "{detail}", {
                "at": "max_pairs",
                "detail": f"max_pairs ({self.max_pairs}) is below repeats ({self.repeats}): "
                          "the first look cannot have more pairs than the last"})
        if self.baseline == "cached" and self.min_delta <= 0 and self.min_delta_rel <= 0:
            raise PydanticCustomError("conflict", "{detail}", {
                "at": "baseline",
                "detail": "cached needs a positive floor: set min_delta or min_delta_rel > 0"})
        return self

    @property
    def lines_on(self) -> bool:
        """True when each agent slot works on its own research line for this benchmark
        (``lines: true``, or an earlier shape's non-zero count or non-empty list; a
        workflow dial, it changes nothing that is measured)."""
        return bool(self.lines)

    @property
    def guard(self) -> bool:
        """True when every candidate is re-measured on this benchmark (``regression:
        true`` or a mapping of allowances)."""
        return self.regression is not False

    @property
    def allowance(self) -> RegressionAllowance | None:
        """How much worse a candidate may make this benchmark (``regression``'s
        mapping); None: no more than its floor."""
        return self.regression if isinstance(self.regression, RegressionAllowance) else None

    @property
    def self_reported(self) -> bool:
        """True when the gate does not measure: results are labelled, never auto-merged."""
        return self.self_report or self.verification == "self_report"


class ReviewTopup(_Model):
    """Extra budget a run gets once it is in review, to answer reviewers."""

    launches: Int = Field(default=2, ge=0)
    sleeps: Int = Field(default=4, ge=0)
    gpu_hours: Float = Field(default=0.5, ge=0)


class Budgets(_Model):
    """Spend per run and per target; ``limits.py`` clamps the knobs that have ceilings."""

    gpu_hours_per_run: Float = Field(ge=0)
    usd_per_run: Float | None = Field(default=None, ge=0, description="model cost (USD) a "
                                      "run's sessions may spend; none: only the operator's")
    runs_per_week: Int = Field(gt=0, description="rolling 7 days")
    max_active_attempts: Int = Field(default=1, ge=1)
    issue_width: Int = Field(default=1, ge=1, le=8, description="runs one issue gets at "
                             "once, each by its own agent slot (forge/width.py)")
    max_concurrent_gpus: Int | None = Field(default=None, ge=1,
                                            description="none: only the operator's cap")
    depth_k: Int = Field(default=DEFAULT_DEPTH_K, ge=0, le=16,
                         description="launches per run unless a benchmark says otherwise")
    sleep_k: Int = Field(default=DEFAULT_SLEEP_K, ge=1, le=32,
                         description="sleeps per run unless a benchmark says otherwise")
    session_max_turns: Int | None = Field(default=None, ge=1, description="clamped 10..120")
    session_minutes: Int | None = Field(default=None, ge=1, description="clamped 10..90")
    attempt_job_minutes: Int | None = Field(default=None, ge=1, description="clamped 40..120")
    followup_job_minutes: Int | None = Field(default=None, ge=1, description="clamped 20..90")
    attempt_cooldown_minutes: Int | None = Field(default=None, ge=0,
                                                 description="clamped 360..10080")
    review_topup: ReviewTopup = Field(default_factory=ReviewTopup)


class Scope(_Model):
    """Where a run may write: under ``allowed`` or ``shared``, never a forbidden path.

    Touching ``shared`` re-measures sibling benchmarks. A ``shared`` prefix is writable
    whether or not it is also listed in ``allowed``.
    """

    allowed: list[ScopePrefix] = Field(min_length=1)
    shared: list[ScopePrefix] = Field(default_factory=list)


class Channels(_Model):
    """What a run's agent may see of others (sibling runs, messages, shared reports)."""

    siblings: Bool = True
    messages: Bool = True
    shared_reports: Bool = True
    branches: Bool = Field(default=True, description="reference format; a workspace never "
                           "has other runs' branches, so false changes nothing")


class Steward(_Model):
    """Reference format: paths a stewardship lane may maintain. Not supported; ignored."""

    allowed: list[ScopePrefix] = Field(default_factory=list)


class Dependencies(_Model):
    """Packages the benchmark needs, built by the kernel into a cache its jobs read."""

    requirements: RepoPath = Field(description="a pip requirements (lock) file read from "
                                   "the base tree: names and versions (with --hash=), no "
                                   "options or URLs; never writable by a run")


def _outside_scope(path: str, scope: object, what: str, at: str = "") -> None:
    """Refuse ``path`` (never writable) overlapping a scope prefix, naming both."""
    road = [fold_component(p) for p in split_repo_path(path) or []]
    for prefix in [*scope.allowed, *scope.shared] if isinstance(scope, Scope) else []:
        parts = [fold_component(p) for p in split_repo_path(prefix) or []]
        if is_under(road, parts) or is_under(parts, road):
            raise PydanticCustomError(
                "overlap", "overlaps scope prefix '{prefix}'; {what} is never writable, so "
                "move it or narrow the scope", {"prefix": prefix, "what": what, "at": at})


class Contract(_Model):
    """A target's ``.outerloop.yaml``, validated. Trust the values; clamp via ``limits``."""

    model_config = ConfigDict(title="outerloop target contract (.outerloop.yaml)")

    benchmarks: list[Benchmark] = Field(min_length=1, max_length=MAX_BENCHMARKS)
    budgets: Budgets
    scope: Scope
    roadmap: RepoPath = Field(description="always a forbidden write path")
    merge: Literal["manual", "auto"] = "manual"
    channels: Channels = Field(default_factory=Channels)
    steward: Steward | None = Field(default=None, description="reference format; ignored")
    suite: Suite | None = Field(default=None, description="{metric, direction}: every "
                                "benchmark is measured beside every candidate and their "
                                "aggregate reported as metric; or the benchmarks the suite "
                                "gate re-measures when a candidate touches scope.shared "
                                "(default: every benchmark); false is ignored")
    guidance: Guidance | None = Field(default=None, description="the maintainers' guidance "
                                      "for agents: quoted in every brief (as data); a "
                                      "reference mode word (default) is not quoted")
    dependencies: Dependencies | None = Field(default=None, description="the packages the "
                                              "benchmark needs (docs/contract.md)")

    @field_validator("benchmarks")
    @classmethod
    def _unique_names(cls, value: list[Benchmark]) -> list[Benchmark]:
        seen: dict[str, int] = {}
        for index, bench in enumerate(value):
            folded = bench.name.casefold()  # issues name benchmarks case-insensitively
            if folded in seen:
                first = value[seen[folded]].name
                same = "" if first == bench.name else f" ('{first}')"
                raise PydanticCustomError("duplicate", "{detail}", {
                    "at": f"[{index}].name",
                    "detail": f"'{bench.name}' is already benchmarks[{seen[folded]}]{same}; "
                              f"names must be unique, ignoring case"})
            seen[folded] = index
        return value

    @model_validator(mode="after")
    def _suite_names_benchmarks(self) -> Contract:
        if not isinstance(self.suite, list):
            return self
        names = {b.name.casefold(): b.name for b in self.benchmarks}
        seen: set[str] = set()
        for index, name in enumerate(self.suite):
            if name.casefold() not in names:
                raise PydanticCustomError("suite", "{detail}", {
                    "at": f"suite[{index}]",
                    "detail": f"'{name}' is not a benchmark of this contract; fix: name one "
                              f"of {', '.join(b.name for b in self.benchmarks)}"})
            if name.casefold() in seen:
                raise PydanticCustomError("suite", "{detail}", {
                    "at": f"suite[{index}]", "detail": f"'{name}' is listed twice"})
            seen.add(name.casefold())
        return self

    @field_validator("roadmap")
    @classmethod
    def _roadmap_outside_scope(cls, value: str, info: ValidationInfo) -> str:
        _outside_scope(value, info.data.get("scope"), "the roadmap")
        return value

    @field_validator("dependencies")
    @classmethod
    def _lock_outside_scope(cls, value: Dependencies | None,
                            info: ValidationInfo) -> Dependencies | None:
        if value is not None:
            _outside_scope(value.requirements, info.data.get("scope"), "the dependency lock",
                           "requirements")
        return value

    @property
    def eval_only(self) -> list[str]:
        """Every benchmark's ``eval_only`` paths, each once: withheld from the agent."""
        return list(dict.fromkeys(p for b in self.benchmarks for p in b.eval_only))

    @property
    def suite_names(self) -> frozenset[str] | None:
        """The benchmarks (casefolded names) the suite gate measures when a candidate
        touches ``scope.shared``; None: every one (no list, or ``suite: true/false``)."""
        if isinstance(self.suite, list):
            return frozenset(name.casefold() for name in self.suite)
        return None

    @property
    def suite_aggregate(self) -> SuiteAggregate | None:
        """``suite: {metric, direction}``: every benchmark measured beside every
        candidate, their aggregate reported; None for the other shapes."""
        return self.suite if isinstance(self.suite, SuiteAggregate) else None

    @property
    def guidance_text(self) -> str:
        """``guidance`` as one text (a list's paragraphs joined by blank lines); empty
        for a mode word, which is not the maintainers' words."""
        if guidance_mode(self.guidance) is not None:
            return ""
        if isinstance(self.guidance, list):
            return "\n\n".join(self.guidance)
        return self.guidance or ""

    def benchmark(self, name: str) -> Benchmark | None:
        """The benchmark called ``name`` (exact), or None."""
        return next((b for b in self.benchmarks if b.name == name), None)


def floor(benchmark: Benchmark, baseline: Decimal) -> Decimal:
    """The contract's noise floor at ``baseline``: max(min_delta, min_delta_rel * |baseline|).

    Exact decimals (via ``str`` of the floats), so the gate's inclusive comparison does
    not flip on binary rounding.
    """
    absolute = Decimal(str(benchmark.min_delta))
    relative = Decimal(str(benchmark.min_delta_rel)) * abs(baseline)
    return max(absolute, relative)


# --------------------------------------------------------------------------- loading


class ContractInvalid(ContractError):
    """A contract failed validation; ``errors`` holds one ``path: problem`` line each."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = errors
        count = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
        super().__init__(f"{source}: invalid contract ({count}): " + "; ".join(errors))


def _parse(text: str) -> tuple[Contract | None, list[str]]:
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_CONTRACT_BYTES:
        return None, [f"(file): {size} bytes; a contract may be at most {MAX_CONTRACT_BYTES}"]
    # yaml and the strict loader only here: a tick reads a contract it validated before
    # back from ``validated.py`` and needs neither (~13 ms of import)
    import yaml

    from outerloop.strict_input import StrictLoader, describe_validation_error

    try:
        data = yaml.load(text, Loader=StrictLoader)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f"line {mark.line + 1}, column {mark.column + 1}: "
        problem = getattr(exc, "problem", None) or str(exc)
        return None, [f"(yaml): {where}{problem}"]
    except RecursionError:
        return None, ["(yaml): nested too deeply"]
    if not isinstance(data, dict):
        found = "empty" if data is None else type(data).__name__
        return None, [f"(top): must be a mapping of fields (benchmarks, budgets, scope, "
                      f"roadmap, ...), found {found}"]
    try:
        return Contract.model_validate(data), []
    except ValidationError as exc:
        return None, describe_validation_error(exc)


def contract_errors(text: str) -> list[str]:
    """Every problem with contract ``text``, one ``path: problem`` line each; [] if valid."""
    return _parse(text)[1]


CONTRACT_MODULES = ("outerloop.contract", "outerloop.contract_paths",
                    "outerloop.contract_reference", "outerloop.strict_input",
                    "outerloop.agent_tool", "outerloop.agent_tool.layout",
                    "outerloop.errors")
"""Where the contract's models and validators live: their sources key the validated
contracts kept under the home (``validated.py``)."""


def load_contract_text(text: str, source: str = CONTRACT_FILE) -> Contract:
    """Parse and validate contract ``text``; ``source`` names it in the error."""
    contract, errors = _parse(text)
    if contract is None:
        raise ContractInvalid(source, errors)
    return contract


def read_contract_text(path: str | Path) -> str:
    """The text of a contract file, refusing what is not a small UTF-8 regular file."""
    target = Path(path)
    try:
        with target.open("rb") as handle:
            raw = handle.read(MAX_CONTRACT_BYTES + 1)
    except FileNotFoundError:
        raise ContractError(f"{target}: no such file; fix: give the path of a "
                            f"{CONTRACT_FILE}") from None
    except IsADirectoryError:
        raise ContractError(f"{target}: is a directory; fix: give the path of a "
                            f"{CONTRACT_FILE}") from None
    except OSError as exc:
        raise ContractError(f"{target}: cannot be read ({exc.strerror})") from None
    if len(raw) > MAX_CONTRACT_BYTES:
        raise ContractInvalid(str(target), [
            f"(file): larger than {MAX_CONTRACT_BYTES} bytes; a contract must be smaller"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractInvalid(str(target), [
            f"(file): not UTF-8 (byte {exc.start}); save the file as UTF-8"]) from None


def load_contract_file(path: str | Path) -> Contract:
    """Read and validate a contract file (for ``contract check`` and tests)."""
    return load_contract_text(read_contract_text(path), str(path))


def schema_json() -> str:
    """The contract's JSON schema as committed in ``contracts/outerloop.schema.json``."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              **Contract.model_json_schema()}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--schema"]:
        sys.exit("usage: python -m outerloop.contract --schema")
    sys.stdout.write(schema_json())
