"""What a lane sees: the folded state, this tick's observations, the settings."""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.config import Settings
from outerloop.kernel.observations import Observations
from outerloop.ledger.state import State


@dataclass(frozen=True)
class TickView:
    state: State
    obs: Observations
    settings: Settings
    hold: bool = False
    """``HOLD`` exists: no new runs, sweeps and followups continue."""
    environment: str = ""
    """The tick found an environment trap that every job inherits (its note says which):
    no new runs either, as every session would fail (``harness/needs.py``)."""
