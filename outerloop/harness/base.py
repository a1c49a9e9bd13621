"""The harness seam: session limits, the session result, and the ``Harness`` protocol.

A harness runs one leg of an agent session in a workspace and reports how it ended.
Rules every backend keeps:

- ``run`` never raises. A missing binary, a malformed script, a crash of the CLI: all
  become ``SessionResult(is_error=True, error_detail=...)``, because the kernel must be
  able to record every leg and end every run with a report.
- ``stop_reason == "refused"`` means the model API refused (auth, credit, rate limit,
  overload). That is an outage, not the agent's fault: the run ends ``stuck`` without
  charging its attempt cap and the role pauses for a cooldown.
- A session that passes ``limits.minutes`` is killed with its whole process group and
  ends ``stop_reason="timeout"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict, Field

StopReason = Literal["end_turn", "max_turns", "timeout", "error", "refused", "permission_denied"]
STOP_REASONS: tuple[str, ...] = get_args(StopReason)

RefusalKind = Literal["auth", "credit", "rate_limit", "overload"]
"""Why the model API refused: ``auth``/``credit`` are account refusals (long cooldown),
``rate_limit``/``overload`` are throttling (short cooldown); see ``harness/outage.py``."""

ERROR_STOPS: frozenset[str] = frozenset({"timeout", "error", "refused", "permission_denied"})
"""Stop reasons for which a session did not reach its own end: ``is_error`` is true.
``max_turns`` is not among them: the agent ran out of turns, and whatever it staged
is still read by the kernel."""


@dataclass(frozen=True)
class SessionLimits:
    """How long one leg may run: at most ``max_turns`` agent turns and ``minutes`` of
    wall time. Both must be at least 1 (a zero limit would make every leg fail)."""

    max_turns: int
    minutes: int

    def __post_init__(self) -> None:
        if self.max_turns < 1 or self.minutes < 1:
            raise ValueError(
                f"session limits must be at least 1 (max_turns={self.max_turns}, "
                f"minutes={self.minutes})"
            )


class SessionResult(BaseModel):
    """How one leg ended, as the kernel records it.

    ``session_id`` is what the next leg passes as ``resume``; None when the session
    never started. ``transcript_path`` points at the backend's own record of the leg
    (kept with the run), None when nothing was written.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    stop_reason: StopReason
    is_error: bool = False
    error_detail: str | None = None
    session_id: str | None = None
    final_text: str = ""
    cost_usd: float = Field(default=0.0, ge=0)
    turns: int = Field(default=0, ge=0)
    tokens: int = Field(default=0, ge=0)
    transcript_path: str | None = None
    refusal: RefusalKind | None = None

    @property
    def outage(self) -> bool:
        """The model API refused: end the run ``stuck``, do not charge the attempt cap."""
        return self.stop_reason == "refused"

    @classmethod
    def failure(
        cls,
        detail: str,
        *,
        stop_reason: StopReason = "error",
        session_id: str | None = None,
        turns: int = 0,
        transcript_path: str | None = None,
        refusal: RefusalKind | None = None,
    ) -> SessionResult:
        """A leg that failed before or while running (``is_error=True``)."""
        return cls(
            stop_reason=stop_reason,
            is_error=True,
            error_detail=detail,
            session_id=session_id,
            turns=turns,
            transcript_path=transcript_path,
            refusal=refusal,
        )


class Harness(Protocol):
    """Runs one leg of an agent session.

    ``prompt`` is the rendered brief (first leg) or wake; ``workspace`` the run's clone
    (the session's working directory); ``home`` the run's private HOME; ``resume`` the
    session id of the previous leg, or None to start a new session. Never raises.
    """

    def run(
        self,
        prompt: str,
        workspace: Path,
        home: Path,
        resume: str | None,
        limits: SessionLimits,
    ) -> SessionResult: ...
