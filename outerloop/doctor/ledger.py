"""The ledger: every line readable and none missing (``ledger/damage.py``)."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok

SHOWN = 10


def check_ledger(settings: Settings) -> list[Check]:
    from outerloop.ledger.book import rebuild

    state = rebuild(settings.home, save_cache=False)
    return [*_lines(settings, state.ledger_damage, state.damaged, state.events),
            *_remote(settings)]


def _remote(settings: Settings) -> list[Check]:
    """A ledger remote that refuses the ledger's pushes fails (it is no backup any more);
    one that takes them is ok; no remote, no check."""
    from outerloop.ledger.book import push_refused

    remote = settings.ledger_remote
    if not remote:
        return []
    refused = push_refused(settings.home)
    if refused is None:
        return [ok("ledger remote", f"the ledger's pushes to {remote} go through")]
    since, why = refused
    ledger = settings.home / "ledger"
    return [fail("ledger remote", f"every push of the ledger to {remote} is refused since "
                 f"{since}: {why or 'no message'}",
                 f"the remote holds commits this ledger does not continue (a ledger repaired "
                 f"or restored from a backup, or another home pushing there): compare "
                 f"`git -C {ledger} fetch {remote} main && git -C {ledger} log --oneline -3 "
                 f"FETCH_HEAD`; then set ledger_remote to a fresh remote, or, once the "
                 f"ledger holds everything the remote has, `git -C {ledger} push "
                 f"--force-with-lease {remote} HEAD:main`; the next tick pushes again")]


def _lines(settings: Settings, ledger_damage: list[str],
           damaged: list[tuple[str, int, str]], events: int) -> list[Check]:
    files = [fail("ledger files", "; ".join(ledger_damage[:SHOWN]),
                  "the next tick restores a damaged file from the ledger's git history; "
                  "a frozen target needs its file back: see docs/operate.md, 'A damaged "
                  "ledger'")] if ledger_damage else []
    if not damaged:
        if files:
            return files
        return [ok("ledger lines", f"{events} events, none damaged")]
    shown = "; ".join(f"ledger/{f}:{n}: {what}" for f, n, what in damaged[:SHOWN])
    more = f" (and {len(damaged) - SHOWN} more)" if len(damaged) > SHOWN else ""
    return [*files, fail("ledger lines", f"{len(damaged)} damaged: {shown}{more}",
                 f"those lines are left out of the state; restore them from the ledger's "
                 f"history (git -C {settings.home / 'ledger'} log -p -- <file>)")]
