"""The shapes of the reference format's loosely documented contract fields.

``benchmarks[].lines``, ``suite`` and ``guidance`` come from the reference contract
format, whose public documentation names them without giving their shapes. So a
contract written for the reference drops in, each accepts the plausible shapes (a
count or a list of lines; a list of benchmark names or a boolean; text or a list of
paragraphs) and refuses anything else with one error naming the field. What this
version does with each is in ``contract_fields``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

MAX_RESEARCH_LINES = 64


def _check_lines(value: Any) -> Any:
    """Reference format: a benchmark's research lines, as a count or a list of lines
    (each a name, or a mapping that describes one). Accepted and not acted on
    (``contract_fields``), so only its shape is checked."""
    shape = ("must be a number of research lines (0..{n}) or a list of lines (names, or "
             "mappings of name: value)")
    if isinstance(value, int) and not isinstance(value, bool):
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


def _check_suite(value: Any) -> Any:
    """``suite``: true/false, or the list of benchmark names the suite gate measures."""
    if isinstance(value, bool) or (isinstance(value, list) and value
                                   and all(isinstance(v, str) for v in value)):
        return value
    raise PydanticCustomError("suite", "must be a list of this contract's benchmark names "
                              "(the suite the gate re-measures), or true/false")


def _check_guidance(value: Any) -> Any:
    """``guidance``: text for the agents (a string, or a list of paragraphs)."""
    if isinstance(value, str) or (isinstance(value, list)
                                  and all(isinstance(v, str) for v in value)):
        return value
    raise PydanticCustomError("guidance", "must be text (a string, or a list of strings) "
                              "for the agents' brief")


Scalar = str | int | float | bool | None
LineEntry = str | dict[str, Scalar | list[Scalar]]
ResearchLines = Annotated[int | list[LineEntry], BeforeValidator(_check_lines)]
Suite = Annotated[bool | list[str], BeforeValidator(_check_suite)]
Guidance = Annotated[str | list[str], BeforeValidator(_check_guidance)]
