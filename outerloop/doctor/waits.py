"""Steps waiting on a human (``human_waits``, issue 48): each is a failed check naming
its run, its cause and the fix; outerloop goes on by itself once the fix is made."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok

NAME = "waits on a human"


def check_human_waits(settings: Settings) -> list[Check]:
    from outerloop.clock import now
    from outerloop.human_waits import human_waits
    from outerloop.ledger.state import rebuild

    waits = human_waits(rebuild(settings.home, save_cache=False), now(),
                        settings.limits.human_retry_minutes * 60)
    if not waits:
        return [ok(NAME, "no step waits on a person")]
    return [fail(NAME, wait.line(), f"{wait.fix}; outerloop tries again by itself")
            for wait in waits]
