"""The shapes of the reference format's contract fields this version reads in more
than one shape: ``benchmarks[].lines``, ``benchmarks[].regression``, ``suite`` and
``guidance``.

A contract written for the reference (outerloop-science) must pass unchanged, so each
field accepts the reference's shape: ``lines: true``, a ``regression`` mapping of
allowances, ``suite: {metric, direction}``, ``guidance: default`` (a mode word). The
shapes this project accepted before the reference's were known (``lines`` as a count or
a list, ``regression: true``, ``suite`` as a list of names or a boolean, ``guidance`` as
text) stay accepted: docs/contract.md documents every one. Anything else is refused
with one error naming the field (``benchmarks[0].regression.free_rel: must be a
non-negative finite number``). What this version does with each is in
``contract_fields``; the gate's use of a regression allowance is ``attempt/suite.py``.

The mappings are checked by hand, not by a pydantic union: a union reports every
member's failure (``regression.bool: ...``, ``regression.RegressionAllowance...``),
where a maintainer needs one line that names the key.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

MAX_RESEARCH_LINES = 64
MAX_SUITE_METRIC_CHARS = 128


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# ------------------------------------------------------------------------ lines


def _check_lines(value: Any) -> Any:
    """``lines``: the reference's ``true``/``false``; or, this project's earlier shape,
    a count or a list of lines (each a name, or a mapping that describes one), read as
    on when non-zero or non-empty (``Benchmark.lines_on``)."""
    shape = ("must be true or false (or, an earlier shape, a number of research lines "
             "0..{n} or a list of lines: names, or mappings of name: value)")
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not 0 <= value <= MAX_RESEARCH_LINES:
            raise PydanticCustomError("lines", shape, {"n": MAX_RESEARCH_LINES})
        return value
    if isinstance(value, list) and len(value) <= MAX_RESEARCH_LINES and all(
            isinstance(item, str) or (isinstance(item, dict) and all(
                isinstance(k, str) and _plain(v) for k, v in item.items()))
            for item in value):
        return value
    raise PydanticCustomError("lines", shape, {"n": MAX_RESEARCH_LINES})


def _plain(value: Any) -> bool:
    """A scalar, or a list of scalars: what a line's description may hold."""
    scalar = (str, int, float, bool, type(None))
    return isinstance(value, scalar) or (
        isinstance(value, list) and all(isinstance(v, scalar) for v in value))


# ------------------------------------------------------------------- regression


RELATIVE_KEYS = ("free_rel", "max_rel", "requires_gain_rel")
ABSOLUTE_KEYS = ("free", "max", "requires_gain")


class RegressionAllowance(_Shape):
    """How much worse this benchmark may get when another one is climbed (the
    reference's ``regression`` mapping). One unit family: relative to this benchmark's
    |baseline| (``*_rel``), or absolute, in its metric's unit. Up to ``free`` is
    allowed without condition, up to ``max`` only when the climbed benchmark gains at
    least ``requires_gain`` (relative: to its |baseline|); beyond ``max`` is no credit.
    Unset ``max`` is ``free``; unset ``free`` is 0; unset ``requires_gain`` asks for no
    more than the credit itself."""

    free_rel: float | None = None
    max_rel: float | None = None
    requires_gain_rel: float | None = None
    free: float | None = None
    max: float | None = None
    requires_gain: float | None = None

    @property
    def relative(self) -> bool:
        return any(getattr(self, key) is not None for key in RELATIVE_KEYS)

    def _get(self, key: str) -> Decimal | None:
        value = getattr(self, f"{key}_rel" if self.relative else key)
        return None if value is None else Decimal(str(value))

    def free_at(self, baseline: Decimal) -> Decimal:
        """The worsening allowed without condition at this benchmark's ``baseline``."""
        free = self._get("free") or Decimal(0)
        return free * abs(baseline) if self.relative else free

    def max_at(self, baseline: Decimal) -> Decimal:
        """The most worsening allowed at all (with the climbed benchmark's gain)."""
        top = self._get("max")
        if top is None:
            return self.free_at(baseline)
        return top * abs(baseline) if self.relative else top

    @property
    def requires_gain_value(self) -> Decimal | None:
        """The gain the climbed benchmark needs for a worsening above ``free`` (relative
        to its |baseline| when ``relative``); None: the credit alone."""
        return self._get("requires_gain")


def _non_negative(key: str, value: Any) -> float:
    number: float | None = None
    if not isinstance(value, bool) and isinstance(value, int | float | str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number < 0:
        raise PydanticCustomError("regression", "must be a non-negative finite number",
                                  {"at": key})
    return number


def _check_regression(value: Any) -> Any:
    """``regression``: true/false (a guard, or not), or a mapping of allowances."""
    if isinstance(value, bool | RegressionAllowance):
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "regression", "must be true or false (a guard), or a mapping of allowances: "
            "free_rel, max_rel, requires_gain_rel, or free, max, requires_gain")
    known = (*RELATIVE_KEYS, *ABSOLUTE_KEYS)
    numbers: dict[str, float] = {}
    for key, raw in value.items():
        if key not in known:
            raise PydanticCustomError("regression", "unknown field; the allowances are "
                                      "{keys}", {"at": str(key), "keys": ", ".join(known)})
        if raw is not None:  # a dumped allowance writes its unset keys as null
            numbers[key] = _non_negative(key, raw)
    rel = [k for k in RELATIVE_KEYS if k in numbers]
    absolute = [k for k in ABSOLUTE_KEYS if k in numbers]
    if rel and absolute:
        raise PydanticCustomError(
            "regression", "mixes relative ({rel}) and absolute ({absolute}) allowances; "
            "use one family", {"rel": rel[0], "absolute": absolute[0]})
    suffix = "_rel" if rel else ""
    free, top, needs = (f"free{suffix}", f"max{suffix}", f"requires_gain{suffix}")
    if needs in numbers and top not in numbers:
        raise PydanticCustomError("regression", "{needs} needs {top}",
                                  {"needs": needs, "top": top})
    if free in numbers and top in numbers and numbers[free] > numbers[top]:
        raise PydanticCustomError("regression", "{free} ({a}) is above {top} ({b})",
                                  {"free": free, "top": top, "a": f"{numbers[free]:g}",
                                   "b": f"{numbers[top]:g}"})
    return RegressionAllowance.model_validate(numbers)


# ------------------------------------------------------------------------ suite


DIRECTION_WORDS = {"min": "min", "minimize": "min", "lower": "min",
                   "max": "max", "maximize": "max", "higher": "max"}
"""The suite's direction as written (the benchmarks' ``min``/``max``, or the words a
reference contract may use) -> ``min``/``max``."""


class SuiteAggregate(_Shape):
    """The reference's ``suite: {metric, direction}``: every benchmark is measured
    beside every candidate, and the PR reports, besides each one, their aggregate
    under the name ``metric`` (``attempt/suite.py``: the mean relative gain, stated
    so that ``direction`` is better)."""

    metric: str = Field(min_length=1, max_length=MAX_SUITE_METRIC_CHARS)
    direction: Literal["min", "max"]


def _check_suite(value: Any) -> Any:
    """``suite``: ``{metric, direction}`` (the reference's), or, this project's earlier
    shapes, the list of benchmark names the suite gate measures, or true/false."""
    if isinstance(value, bool | SuiteAggregate) or (
            isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError("suite", "must be a mapping {metric, direction} (or a "
                                  "list of this contract's benchmark names, or true/false)")
    for key in value:
        if key not in ("metric", "direction"):
            raise PydanticCustomError("suite", "unknown field; the suite has metric and "
                                      "direction", {"at": str(key)})
    metric, direction = value.get("metric"), value.get("direction")
    if metric is None:
        raise PydanticCustomError("suite", "required field is missing", {"at": "metric"})
    if not isinstance(metric, str) or not 1 <= len(metric) <= MAX_SUITE_METRIC_CHARS:
        raise PydanticCustomError("suite", "must be a name of 1 to {n} characters",
                                  {"at": "metric", "n": MAX_SUITE_METRIC_CHARS})
    if direction is None:
        raise PydanticCustomError("suite", "required field is missing", {"at": "direction"})
    if not isinstance(direction, str) or direction.casefold() not in DIRECTION_WORDS:
        raise PydanticCustomError("suite", "must be 'max' or 'min' (or maximize/minimize, "
                                  "higher/lower)", {"at": "direction"})
    return SuiteAggregate.model_construct(metric=metric,
                                          direction=DIRECTION_WORDS[direction.casefold()])


# --------------------------------------------------------------------- guidance


GUIDANCE_MODES = frozenset({"default"})
"""The reference's guidance modes this version recognises as modes, not text."""


def guidance_mode(value: str | list[str] | None) -> str | None:
    """The reference guidance mode ``guidance`` names (``guidance: default``), or None
    when it is text for the brief."""
    if isinstance(value, str) and value.strip().casefold() in GUIDANCE_MODES:
        return value.strip().casefold()
    return None


def _check_guidance(value: Any) -> Any:
    """``guidance``: text for the agents (a string, or a list of paragraphs), or a
    reference mode word (``default``), which is a string too."""
    if isinstance(value, str) or (isinstance(value, list)
                                  and all(isinstance(v, str) for v in value)):
        return value
    raise PydanticCustomError("guidance", "must be text (a string, or a list of strings) "
                              "for the agents' brief, or a guidance mode ({modes})",
                              {"modes": ", ".join(sorted(GUIDANCE_MODES))})


Scalar = str | int | float | bool | None
LineEntry = str | dict[str, Scalar | list[Scalar]]
ResearchLines = Annotated[bool | int | list[LineEntry], BeforeValidator(_check_lines)]
Regression = Annotated[bool | RegressionAllowance, BeforeValidator(_check_regression)]
Suite = Annotated[bool | list[str] | SuiteAggregate, BeforeValidator(_check_suite)]
Guidance = Annotated[str | list[str], BeforeValidator(_check_guidance)]
