"""The ledger: every line readable and none missing (``ledger/damage.py``)."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok

SHOWN = 10


def check_ledger(settings: Settings) -> list[Check]:
    from outerloop.ledger.state import rebuild

    state = rebuild(settings.home, save_cache=False)
    files = [fail("ledger files", "; ".join(state.ledger_damage[:SHOWN]),
                  "the next tick restores a damaged file from the ledger's git history; "
                  "a frozen target needs its file back: see docs/operate.md, 'A damaged "
                  "ledger'")] if state.ledger_damage else []
    if not state.damaged:
        if files:
            return files
        return [ok("ledger lines", f"{state.events} events, none damaged")]
    shown = "; ".join(f"ledger/{f}:{n}: {what}" for f, n, what in state.damaged[:SHOWN])
    more = f" (and {len(state.damaged) - SHOWN} more)" if len(state.damaged) > SHOWN else ""
    return [*files, fail("ledger lines", f"{len(state.damaged)} damaged: {shown}{more}",
                 f"those lines are left out of the state; restore them from the ledger's "
                 f"history (git -C {settings.home / 'ledger'} log -p -- <file>)")]
