"""An issue's width: how many runs it gets at once, each by its own agent slot.

The contract says a target's default (``budgets.issue_width``, 1..``MAX_ISSUE_WIDTH``,
default 1: one run per issue, as before). A maintainer overrides it for one issue with
the label ``outerloop:width:N`` (``WIDTH_LABEL``). A label, not a line of the issue's
body: a body is its author's text (an outsider's, once a maintainer approves the
issue), parsed nowhere else for commands, and edited at will after the issue is taken;
a label is one exact token, and it counts only when its latest application, per the
issue's timeline, was by someone with write access (the rule ``outerloop:approved``
follows, ``standing.py``): on GitHub only triagers and up can label at all, and the
local forge records who labelled. A width label applied by anyone else, or one that
does not parse, is ignored (the contract's default holds) and said why. While a run of
the issue lives, a maintainer may also write ``/outerloop widen N`` in its thread
(``lanes/steering.py``): recorded in the ledger, it stands in for the contract's
default; a width label still says more.

Whatever is asked, the width is capped by ``MAX_ISSUE_WIDTH`` and by the target's agent
slots (``max_active_attempts``: slots are ``agent-01`` up to it, one run each). Pure
functions over forge records; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from outerloop.forge.base import Issue, LabelEvent

MAX_ISSUE_WIDTH = 8
"""The most runs one issue gets at once, whatever its label or contract says."""
WIDTH_LABEL = "outerloop:width:"
"""The override's prefix: ``outerloop:width:3`` asks for three runs at once."""
_LABEL_RE = re.compile(r"^outerloop:width:([1-9][0-9]?)$")


@dataclass(frozen=True, slots=True)
class Width:
    """An issue's width and, when it is not what was asked, why."""

    runs: int
    why: str = ""


def _shown(label: str) -> str:
    """A label as the kernel quotes it: anyone may type one, so only plain characters."""
    return re.sub(r"[^A-Za-z0-9:._-]", "?", label)


def width_labels(issue: Issue) -> list[str]:
    """The issue's labels that ask for a width (parsed or not)."""
    return [label for label in issue.labels if label.startswith(WIDTH_LABEL)]


def issue_width(issue: Issue, events: Sequence[LabelEvent], default: int,
                slots: int, widened: int | None = None) -> Width:
    """How many runs ``issue`` gets at once: its writer-applied ``outerloop:width:N``
    label, else what a maintainer's ``/outerloop widen N`` asked (``widened``), else the
    contract's ``default``; at most ``MAX_ISSUE_WIDTH`` and ``slots``."""
    asked, why = (widened if widened is not None else default), ""
    labels = width_labels(issue)
    if len(labels) > 1:
        why = (f"it carries {len(labels)} width labels "
               f"({', '.join(sorted(_shown(x) for x in labels))}), so "
               f"none counts; fix: keep one")
    elif labels:
        label = labels[0]
        found = _LABEL_RE.match(label)
        applied = [e for e in events if e.label == label]
        if found is None:
            why = (f"label {_shown(label)} is not a width; fix: {WIDTH_LABEL}N, N from 1 to "
                   f"{MAX_ISSUE_WIDTH}")
        elif not applied or not max(applied, key=lambda e: e.created_at).actor_can_write:
            why = (f"label {_shown(label)} was not applied by someone with write access, so it "
                   f"does not count")
        else:
            asked = int(found.group(1))
    runs = max(1, min(asked, MAX_ISSUE_WIDTH, slots))
    if runs < asked:
        why = (f"{asked} runs asked, capped at {runs} (the target's {slots} agent slot(s), "
               f"max_active_attempts; at most {MAX_ISSUE_WIDTH})")
    return Width(runs, why)
