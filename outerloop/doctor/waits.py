"""Steps waiting on a human (``human_waits``, issue 48), and runs waiting for the
deployment's fix (issue 51: the machine wait ``status`` and the board show): each is a
failed check naming its run, its cause and the fix; outerloop goes on by itself once
the fix is made."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok

NAME = "waits on a human"


def check_human_waits(settings: Settings) -> list[Check]:
    from outerloop.clock import now
    from outerloop.human_waits import human_waits
    from outerloop.ledger.book import rebuild

    state = rebuild(settings.home, save_cache=False)
    waits = human_waits(state, now(), settings.limits.human_retry_minutes * 60)
    deployment = [w for w in (state.machine_wait(r) for r in state.active_runs())
                  if w is not None and w.origin == "deployment"]
    if not waits and not deployment:
        return [ok(NAME, "no step waits on a person")]
    return [*[fail(NAME, wait.line(), f"{wait.fix}; outerloop tries again by itself")
              for wait in waits],
            *[fail("waits for the deployment", wait.message.split(" fix: ", 1)[0],
                   "fix:" + wait.message.split(" fix: ", 1)[-1] if " fix: " in wait.message
                   else "fix the setting the line names; the run goes on by itself")
              for wait in deployment]]
