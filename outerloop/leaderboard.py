"""The leaderboard (issue 50, point 5): per agent slot of a target, with the harness and
model it runs, how many runs it made, how many pull requests carried a credited result
and how many were merged, the GPU-hours and model cost its runs were charged, and those
per credited pull request (None when it has none: no figure is made up).

A run takes its slot from its agent name (``fleet.slot_index``: ``agent-NN`` is slot
``(NN-1) mod len(agents)``) and its harness and model from the seat recorded when it was
claimed (``RunQueued.seat``): a slot whose settings were edited shows one row per seat
it ran in. A run claimed before seats were recorded counts under its slot's seat in
the settings now.

The counts come from ``History.agent_counts`` (the settled runs' tally plus the runs it
does not hold), never a pass over every run ever recorded. ``leaderboard_rows`` is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from outerloop.ledger.history import AgentCounts, History
from outerloop.numfmt import format_hours, format_usd

if TYPE_CHECKING:
    from outerloop.config import Settings
    from outerloop.ledger.state import State

SlotSeats = Callable[[str], list[tuple[str, str]]]
"""A target's slots in order, each its (harness kind, model; empty: the harness's
default model)."""


@dataclass(frozen=True, slots=True)
class LeaderRow:
    target: str
    slot: int
    """The slot's place among the target's ``agents``, from 1 (1: ``[harness]`` alone
    when the target lists none)."""
    harness: str
    model: str
    """Empty: the harness's default model."""
    runs: int
    credited_prs: int
    merged_prs: int
    gpu_hours: float
    money_usd: float
    gpu_hours_per_credited_pr: float | None
    money_usd_per_credited_pr: float | None
    """None: the slot has no credited pull request."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _slot_of(agent: str, slots: int) -> int:
    from outerloop.fleet import slot_index

    return slot_index(agent, slots)


def leaderboard_rows(counts: Mapping[tuple[str, str], AgentCounts],
                     seats: SlotSeats) -> list[LeaderRow]:
    """One row per (target, slot) with a run, by target then slot: ``counts`` per
    (target, agent name) summed over the agent names that share a slot."""
    summed: dict[tuple[str, int, str, str], AgentCounts] = {}
    slots: dict[str, list[tuple[str, str]]] = {}
    for (target, key), told in counts.items():
        if target not in slots:
            slots[target] = seats(target) or [("", "")]
        agent, _, seat = key.partition("@")
        index = _slot_of(agent, len(slots[target]))
        harness, model = [*seat.split(":", 1), ""][:2] if seat else slots[target][index]
        summed.setdefault((target, index, harness, model), AgentCounts()).merge(told)
    rows = []
    for (target, index, harness, model), c in sorted(summed.items()):
        hours = round(c.gpu_seconds / 3600, 4)
        usd = round(c.cost_micro / 1_000_000, 4)
        rows.append(LeaderRow(
            target=target, slot=index + 1, harness=harness, model=model, runs=c.runs,
            credited_prs=c.credited_prs, merged_prs=c.merged_prs, gpu_hours=hours,
            money_usd=usd,
            gpu_hours_per_credited_pr=round(hours / c.credited_prs, 4) if c.credited_prs
            else None,
            money_usd_per_credited_pr=round(usd / c.credited_prs, 4) if c.credited_prs
            else None))
    return rows


def leaderboard(state: State, seats: SlotSeats,
                history: History | None = None) -> list[LeaderRow]:
    """The leaderboard of ``state``'s runs (``history``: the runs to count, when the
    caller has them; default every run); pure."""
    return leaderboard_rows((history or History.of(state.runs)).agent_counts(), seats)


def settings_seats(settings: Settings) -> SlotSeats:
    """A target's slots as the settings resolve them (``fleet.agent_seats``)."""
    from outerloop.fleet import agent_seats

    def seats(target: str) -> list[tuple[str, str]]:
        return [(s.harness.kind, s.harness.model or "") for s in agent_seats(settings, target)]
    return seats


def row_text(row: LeaderRow) -> str:
    """``o/t slot 1 claude:opus  4 runs, 2 credited PRs, 1 merged, 3.5 GPU-h ($1.20),
    per credited PR 1.75 GPU-h, $0.60``."""
    model = f":{row.model}" if row.model else ""
    per = (f"per credited PR {format_hours(row.gpu_hours_per_credited_pr)} GPU-h, "
           f"{format_usd(row.money_usd_per_credited_pr or 0.0)}"
           if row.gpu_hours_per_credited_pr is not None else "no credited PR")
    return (f"  {row.target}  slot {row.slot} {row.harness}{model}  {row.runs} run"
            f"{'s' if row.runs != 1 else ''}, {row.credited_prs} credited PR"
            f"{'s' if row.credited_prs != 1 else ''}, {row.merged_prs} merged, "
            f"{format_hours(row.gpu_hours)} GPU-h, {format_usd(row.money_usd)}; {per}")
