"""``--json``: one envelope for every read command.

A read command declares ``@json_option`` and, given ``--json``, prints exactly one JSON
object on stdout through ``emit``:

- ``{"ok": true, ...}``: it worked; the rest are the command's own keys;
- ``{"ok": false, ...}``: it ran, and what it checks failed (a doctor check, a ledger
  break, an invalid contract, a tick's failed action); the exit code is the text form's;
- ``{"ok": false, "error": {"message", "fix", "kind", "exit_code"}}``: it could not run
  (no home, a bad ``outerloop.toml``, a bad argument, a full disk). The click group
  words these (``group.py``) with the exit code the one-line text error has: 1 for an
  ``OuterloopError`` (its own code for a subclass that has one), 2 for a usage error.

Whether a command line wants JSON is read from its words (``wants_json``), not from the
parsed option, so an error click raises while parsing (a missing argument, an unknown
option) is JSON too. docs/operate.md holds the one table of every read command and its
keys; ``tests/unit/test_json_everywhere.py`` walks the command tree against it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click

JSON_FLAG = "--json"
F = TypeVar("F", bound=Callable[..., Any])

_FIX = re.compile(r"(?:[;.]|\(|,)\s*fix:\s*", re.IGNORECASE)


def json_option(func: F) -> F:
    """``--json`` (as the ``as_json`` parameter): print the envelope, not text."""
    return click.option(JSON_FLAG, "as_json", is_flag=True,
                        help="Print one JSON object on stdout: {\"ok\": ..., ...} "
                             "(docs/operate.md, \"Machine-readable output\").")(func)


def emit(ok: bool = True, payload: Mapping[str, object] | None = None, /,
         **keys: object) -> None:
    """Print the envelope: ``ok`` first, then the command's keys (``payload``'s, then
    ``keys``); an ``ok`` in ``payload`` is the one given here."""
    body = {k: v for k, v in (payload or {}).items() if k != "ok"}
    click.echo(json.dumps({"ok": ok, **body, **keys}, indent=2, default=str))


def wants_json(words: Sequence[str]) -> bool:
    """``--json`` is one of the command line's words before a ``--``."""
    for word in words:
        if word == "--":
            return False
        if word == JSON_FLAG:
            return True
    return False


def split_fix(text: str) -> tuple[str, str | None]:
    """An error's words as (what is wrong, the fix or None): messages name their fix
    after ``fix:`` (``"no home at X; fix: outerloop init"``)."""
    found = _FIX.search(text)
    if found is None:
        return text.strip(), None
    what, fix = text[:found.start()].strip(), text[found.end():].strip()
    if found.group(0).startswith("(") and fix.endswith(")"):
        fix = fix[:-1].rstrip()
    return what, fix or None


def error_kind(exc: BaseException) -> str:
    """The error's class as ``errors.py`` names it (``UnknownRun`` is a ``NotFound``),
    else its own class's name (``OSError``)."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "outerloop.errors":
            return cls.__name__
    return type(exc).__name__


def error_text(message: str, kind: str, exit_code: int) -> str:
    """The envelope of a command that could not run."""
    what, fix = split_fix(message)
    return json.dumps({"ok": False, "error": {"message": what, "fix": fix, "kind": kind,
                                              "exit_code": exit_code}}, indent=2)
