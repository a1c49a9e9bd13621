"""The research lines' events (``run/lines.py``): a hand-over saved on a slot's line,
and an operator's fresh start of a slot's line."""

from __future__ import annotations

import msgspec

from outerloop.ledger.event_parts import _Event


class LineSaved(_Event, tag="line_saved", frozen=True, kw_only=True):
    """At a hand-over (leg ``leg``'s end) the run's job committed the agent's work tree,
    memory included, on its research line as ``sha`` in the kernel's clone; the tick
    pushes it (``PushLine``). ``withheld``: paths left at their previous version on the
    line because they carried a known secret value; ``refused``: memory files left so
    because they were not regular files of at most ``lines.MAX_MEMORY_FILE_BYTES``."""

    sha: str
    leg: int = 0
    withheld: list[str] = msgspec.field(default_factory=list)
    refused: list[str] = msgspec.field(default_factory=list)


class LineReset(_Event, tag="line_reset", frozen=True, kw_only=True):
    """The operator started agent slot ``agent``'s research line on ``target`` afresh
    (``outerloop line reset``): its next run starts a new line from the base, on the next
    branch of ``line_paths.line_branch``; the old line stays on the forge as it is.
    Written in the target's tick file, under the tick lock."""

    target: str
    agent: str
    reason: str = ""
