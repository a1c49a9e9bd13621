"""The steps of a run's job, as values: the leg cycle is one loop (``session.drive``).

Each step function does one thing and returns what happens next, mini-swe-agent's
shape instead of functions that call the next leg themselves:

- ``Leg``: run an agent session leg with these inputs (a brief, a wake's results,
  verdict and notes, or a refused leg's prompt again);
- ``Act``: act on the request the last leg committed (launches, a submission, stop);
- a ``str``: the job is done for now (parked, waiting, ended); the line it reports.

A request the kernel will not act on raises ``RequestRefused`` from wherever the rule is
checked (budget, scope, GPUs, an unchanged tree); ``request.act_on_request`` turns it
into the next leg, whose prompt carries the note, so each rule states its refusal once
and no check needs to know how the agent is told.
"""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.run.render import LaunchResult, VerdictView


@dataclass(frozen=True)
class Leg:
    """Run one agent leg. ``first``: a fresh session gets the brief; ``again``: the
    refused leg's prompt shown again; else a wake with ``results``, ``verdict`` and
    ``notes`` (the kernel's words to the agent)."""
    first: bool = False
    notes: tuple[str, ...] = ()
    results: tuple[LaunchResult, ...] = ()
    verdict: VerdictView | None = None
    again: str | None = None


@dataclass(frozen=True)
class Act:
    """Act on the last leg's committed request (idempotent after a crash)."""


Step = Leg | Act | str
"""What the job does next; a ``str`` ends the loop with the job's one-line account."""


class RequestRefused(Exception):
    """The kernel will not act on the agent's request. ``note`` is the agent-facing
    message (``Refused: ...`` and what to do instead); nothing of the request was
    charged or submitted."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note
