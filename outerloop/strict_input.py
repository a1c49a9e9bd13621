"""Strict input for files people write: YAML without the features that hide what a
field holds, and pydantic's errors as one ``field.path: what is wrong`` line each.

Imports nothing from outerloop, so any loader (the contract, a scripted agent) can use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import ValidationError

__all__ = ["StrictLoader", "YamlRefused", "describe_validation_error"]


class YamlRefused(yaml.YAMLError):
    def __init__(self, node_or_event: Any, problem: str) -> None:
        mark = node_or_event.start_mark
        super().__init__(f"line {mark.line + 1}, column {mark.column + 1}: {problem}")


class StrictLoader(yaml.SafeLoader):
    """``yaml.safe_load`` minus anchors, aliases, merge keys and duplicate keys.

    Aliases allow exponential "billion laughs" expansion and hide what a field really
    holds; a duplicate key silently lets the last value win. Both are refused.
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise YamlRefused(event, f"alias *{event.anchor} is not allowed; write the value")
        if getattr(event, "anchor", None) is not None:
            raise YamlRefused(event, f"anchor &{event.anchor} is not allowed")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise YamlRefused(key_node, "merge keys (<<) are not allowed")
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                raise YamlRefused(key_node, "a key must be a plain scalar") from None
            if duplicate:
                raise YamlRefused(key_node, f"duplicate key '{key}'; each key may appear once")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _loc(loc: Sequence[int | str], at: str = "") -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    if at:
        out += at if at.startswith("[") or not out else "." + at
    return out or "(top)"


_MESSAGES = {
    "extra_forbidden": "unknown field",
    "missing": "required field is missing",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "dict_type": "must be a mapping",
}


def _message(error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in _MESSAGES:
        return _MESSAGES[kind]
    if kind == "literal_error":
        return f"must be {ctx['expected']}"
    if kind == "string_pattern_mismatch":
        return f"must match {ctx['pattern']}"
    bounds = {"greater_than_equal": ("at least", "ge"), "greater_than": ("greater than", "gt"),
              "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}
    if kind in bounds:
        words, key = bounds[kind]
        bound = ctx[key]
        return f"must be {words} {int(bound) if bound == int(bound) else bound}"
    if kind in ("too_short", "string_too_short"):
        return f"must have at least {ctx['min_length']} " + (
            "item(s)" if kind == "too_short" else "character(s)")
    if kind in ("too_long", "string_too_long"):
        return f"must have at most {ctx['max_length']} " + (
            "item(s)" if kind == "too_long" else "character(s)")
    return str(error["msg"]).removeprefix("Value error, ")


def describe_validation_error(exc: ValidationError) -> list[str]:
    """Pydantic's errors as ``benchmarks[1].direction: must be 'min' or 'max'`` lines."""
    lines = []
    for error in exc.errors():
        at = str((error.get("ctx") or {}).get("at", ""))
        lines.append(f"{_loc(error['loc'], at)}: {_message(error)}")
    return lines
