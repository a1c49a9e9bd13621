"""What this version does with each contract field: honoured, or accepted and ignored.

Every field of the reference contract format is accepted, so a target written for the
reference works unchanged. A few are not supported by this version: when a contract
sets one to a value that would change behaviour, ``ignored_field_warnings`` says so,
one line each, and ``contract check``, ``doctor`` and the tick's notes print them. No
field is accepted silently and then does nothing: ``FIELD_STATUS`` names every field,
and a test maps each honoured one to the test that shows it working (docs/contract.md
carries the same table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from outerloop.contract import Benchmark, Contract
from outerloop.contract_reference import guidance_mode

IGNORED = "not supported by this version; ignored"


@dataclass(frozen=True)
class FieldStatus:
    status: Literal["honoured", "ignored"]
    what: str


_FREE = "how much worse it may get, without condition, when another benchmark is climbed"
_MAX = "the most it may get worse, when the climbed benchmark gains enough"
_NEEDS = "the gain the climbed benchmark needs for a worsening above free"


def _honoured(what: str) -> FieldStatus:
    return FieldStatus("honoured", what)


def _ignored(what: str) -> FieldStatus:
    return FieldStatus("ignored", what)


FIELD_STATUS: dict[str, FieldStatus] = {
    "benchmarks[].name": _honoured("issues name a benchmark by it"),
    "benchmarks[].command": _honoured("the gate runs it, read from the base tree"),
    "benchmarks[].metric": _honoured("read from the last JSON line carrying it"),
    "benchmarks[].direction": _honoured("which way the gate credits"),
    "benchmarks[].seed_env": _honoured("receives the hidden seed"),
    "benchmarks[].min_delta": _honoured("absolute floor of the gate"),
    "benchmarks[].min_delta_rel": _honoured("relative floor of the gate"),
    "benchmarks[].eval_minutes": _honoured("eval jobs' time limit"),
    "benchmarks[].gpus": _honoured("GPUs per node of each eval job and launch task"),
    "benchmarks[].nodes": _honoured("nodes of each eval job and GPU launch task"),
    "benchmarks[].baseline": _ignored("the base is measured beside every candidate "
                                      "(paired)"),
    "benchmarks[].depth_k": _honoured("launch budget"),
    "benchmarks[].sleep_k": _honoured("sleep budget"),
    "benchmarks[].display_digits": _honoured("significant digits wherever the metric is shown"),
    "benchmarks[].scale": _honoured("how a change of the metric is stated in words"),
    "benchmarks[].verification": _ignored("every benchmark is measured by the gate"),
    "benchmarks[].self_report": _ignored("every benchmark is measured by the gate"),
    "benchmarks[].repeats": _honoured(
        "seeds (couples of eval pairs) at the gate's first look (at least 3)"),
    "benchmarks[].confidence": _honoured("the gate's confidence over a whole run"),
    "benchmarks[].max_pairs": _honoured(
        "the most seeds (couples of eval pairs) one submission gets"),
    "benchmarks[].score": _honoured("the trusted scorer, run from the base tree"),
    "benchmarks[].outputs": _honoured("what command writes for the scorer"),
    "benchmarks[].eval_only": _honoured("withheld from the agent; only the scorer reads"),
    "benchmarks[].regression": _honoured("a guard: every candidate is re-measured on it and "
                                         "not credited if it gets worse than its floor "
                                         "or its allowance"),
    "benchmarks[].regression.free_rel": _honoured(_FREE + " (relative to its baseline)"),
    "benchmarks[].regression.max_rel": _honoured(_MAX + " (relative to its baseline)"),
    "benchmarks[].regression.requires_gain_rel": _honoured(
        _NEEDS + " (relative to the climbed baseline)"),
    "benchmarks[].regression.free": _honoured(_FREE),
    "benchmarks[].regression.max": _honoured(_MAX),
    "benchmarks[].regression.requires_gain": _honoured(_NEEDS),
    "benchmarks[].lines": _honoured("each agent slot keeps its own research line "
                                    "(agents/<agent-id>), with its memory"),
    "budgets.gpu_hours_per_run": _honoured("GPU-hours a run may use; x runs_per_week "
                                           "per target and week"),
    "budgets.usd_per_run": _honoured("model cost a run may spend; x runs_per_week per "
                                     "target and week"),
    "budgets.runs_per_week": _honoured("admission stops at the week's runs"),
    "budgets.max_active_attempts": _honoured("runs in flight at once"),
    "budgets.issue_width": _honoured("runs one issue gets at once, each by its own agent "
                                     "slot; a maintainer's outerloop:width:N label overrides "
                                     "it"),
    "budgets.max_concurrent_gpus": _honoured("GPUs a target's launches hold at once"),
    "budgets.depth_k": _honoured("default launch budget"),
    "budgets.sleep_k": _honoured("default sleep budget"),
    "budgets.session_max_turns": _honoured("agent turns per session"),
    "budgets.session_minutes": _honoured("minutes per session"),
    "budgets.attempt_job_minutes": _honoured("climb and wake jobs' limit"),
    "budgets.followup_job_minutes": _honoured("review wake jobs' limit"),
    "budgets.attempt_cooldown_minutes": _ignored("runs start only from issues, so there "
                                                 "is nothing to pace"),
    "budgets.review_topup.launches": _honoured("extra launches in review"),
    "budgets.review_topup.sleeps": _honoured("extra sleeps in review"),
    "budgets.review_topup.gpu_hours": _honoured("extra GPU-hours in review"),
    "scope.allowed": _honoured("where a run may write"),
    "scope.shared": _honoured("also writable"),
    "roadmap": _honoured("shown in the brief; never writable"),
    "merge": _ignored("pull requests wait for a human merge"),
    "channels.siblings": _honoured("the agent's sibling view"),
    "channels.messages": _honoured("the agent's thread messages"),
    "channels.shared_reports": _honoured("other runs' reports in the brief"),
    "channels.branches": _honoured("a workspace never holds other runs' branches"),
    "steward": _ignored("there is no stewardship lane"),
    "steward.allowed": _ignored("there is no stewardship lane"),
    "suite": _honoured("a list: the benchmarks the suite gate re-measures when "
                       "scope.shared is touched; {metric, direction}: every benchmark "
                       "re-measured beside every candidate"),
    "suite.metric": _honoured("the name the PR gives the benchmarks' aggregate (their mean "
                              "relative gain; reported, not gated on)"),
    "suite.direction": _honoured("which way the aggregate is stated as better"),
    "guidance": _honoured("quoted in every brief, as the maintainers' words (a mode word "
                          "such as default is warned about and not quoted)"),
    "dependencies": _honoured("the packages the benchmark needs, built into a cache on "
                              "the tick host"),
    "dependencies.requirements": _honoured("the lock the cache is built from (read from "
                                           "the base tree; never writable by a run)"),
}
"""Every field path of the schema (``[]`` for list items) and what becomes of it."""


def _bench_checks() -> dict[str, Callable[[Benchmark], bool]]:
    """For each ignored benchmark field: True when its value would change behaviour."""
    return {
        "baseline": lambda b: b.baseline != "paired",
        "verification": lambda b: b.verification != "gate",
        "self_report": lambda b: b.self_report,
    }


def _contract_checks() -> dict[str, Callable[[Contract], Any]]:
    return {
        "budgets.attempt_cooldown_minutes": lambda c: c.budgets.attempt_cooldown_minutes
        is not None,
        "merge": lambda c: c.merge != "manual",
        "steward": lambda c: c.steward is not None,
    }


SUITE_OFF = (f"suite: {IGNORED} (false turns nothing off: the suite gate still "
             f"re-measures every benchmark when a candidate touches scope.shared)")


LINES_COUNTED = ("an earlier shape of lines: read as lines: {on} (each agent slot keeps "
                 "its own research line; the count and the names are not used)")


def guidance_mode_warning(mode: str) -> str:
    """What ``contract check`` says of ``guidance: <mode>``: the reference's modes do not
    exist here, and the word is not quoted to the agents as the maintainers' words."""
    return (f"guidance: '{mode}' is a reference guidance mode; this version quotes "
            f"contract guidance text in each brief and has no modes (nothing is quoted)")


def ignored_field_warnings(contract: Contract) -> list[str]:
    """One line per field set to a value this version does not act on as written; []
    if none.

    ``suite`` is honoured as a list of benchmark names or ``{metric, direction}``;
    ``suite: false`` (turning the suite gate off) is the one value of it this version
    does not act on. ``guidance`` naming a reference mode (``default``) is not quoted,
    and a count or list of ``lines`` is read as on or off."""
    lines: list[str] = []
    for index, bench in enumerate(contract.benchmarks):
        for name, matters in _bench_checks().items():
            if matters(bench):
                why = FIELD_STATUS[f"benchmarks[].{name}"].what
                lines.append(f"benchmarks[{index}].{name}: {IGNORED} ({why})")
        if bench.lines is not None and not isinstance(bench.lines, bool):
            on = "true" if bench.lines_on else "false"
            lines.append(f"benchmarks[{index}].lines: {LINES_COUNTED.format(on=on)}")
    for path, applies in _contract_checks().items():
        if applies(contract):
            lines.append(f"{path}: {IGNORED} ({FIELD_STATUS[path].what})")
    if contract.suite is False:
        lines.append(SUITE_OFF)
    mode = guidance_mode(contract.guidance)
    if mode is not None:
        lines.append(guidance_mode_warning(mode))
    return lines


def schema_field_paths() -> list[str]:
    """Every field path of the contract schema, as ``FIELD_STATUS`` spells them."""
    from pydantic import BaseModel

    def walk(model: type[BaseModel], prefix: str) -> list[str]:
        out: list[str] = []
        for name, info in model.model_fields.items():
            path = f"{prefix}{name}"
            out.append(path)
            nested = _model_of(info.annotation)
            if nested is not None:
                inner = f"{path}[]." if _is_list(info.annotation) else f"{path}."
                out.extend(walk(nested, inner))
        return out

    paths = walk(Contract, "")
    return [p for p in paths if p not in ("benchmarks", "budgets", "scope", "channels",
                                          "budgets.review_topup")]


def _is_list(annotation: Any) -> bool:
    return getattr(annotation, "__origin__", None) is list


def _model_of(annotation: Any) -> Any:
    """The pydantic model ``annotation`` holds, through unions and ``Annotated``
    (``suite: Annotated[bool | list[str] | SuiteAggregate, ...] | None``), or None."""
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for item in get_args(annotation):
        found = _model_of(item)
        if found is not None:
            return found
    return None
