"""What a lane sees: the folded state, this tick's observations, the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from outerloop.config import Settings
from outerloop.kernel.observations import Observations
from outerloop.ledger.state import State

if TYPE_CHECKING:
    from outerloop.board_memo import BoardMemo


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
    boards: BoardMemo | None = None
    """What each board was last rendered from (``board_memo.py``): the record lane skips
    rendering a board whose view it rendered before. None: render (no memo read)."""
