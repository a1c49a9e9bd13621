"""The ``outerloop`` command. Thin: parse, call into the packages, print.

``main`` is the click group (``group.py``: each command group in its own module,
imported only when it is run); ``entry`` is the installed command, which runs a plain
``outerloop tick`` line without importing click at all (``tick_run.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from outerloop.cli.group import main

__all__ = ["FAST_EXIT", "entry", "main"]


def __getattr__(name: str) -> Any:
    """``main``, imported when asked for (it imports click)."""
    if name == "main":
        from outerloop.cli.group import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FAST_EXIT = "fast_exit"
"""Set in ``ctx.obj`` by a command whose process may leave without tearing the
interpreter down (``tick``: everything it wrote is closed, synced and committed)."""


def entry(args: Sequence[str] | None = None) -> None:
    """The installed ``outerloop`` and ``python -m outerloop``: a plain tick line runs
    without click (``tick_run.py``), anything else through ``main``; after a command that
    allows it (``FAST_EXIT``), leave at once. Tearing down a tick's interpreter (its
    modules and its fold's objects, freed one by one) costs ~0.06 s, a tenth of a quiet
    tick; tests call ``main`` and never get here."""
    words = list(sys.argv[1:] if args is None else args)
    from outerloop.cli.tick_run import plain_tick, run_plain

    plain = plain_tick(words)
    if plain is not None:
        code, ended = run_plain(plain)
        if ended:
            _leave(code)
        raise SystemExit(code)
    from outerloop.cli.group import main

    obj: dict[str, Any] = {}
    try:
        main(words, obj=obj)
    except SystemExit as exc:
        if obj.get(FAST_EXIT):
            _leave(exc.code)
        raise


def _leave(code: object) -> None:
    """Exit with ``code`` as ``SystemExit`` would (None: 0, text: printed, 1) after the
    ``atexit`` handlers and the flush of stdout and stderr, skipping only the teardown.
    Returns (and the normal exit follows) while another thread is alive: it may still
    be writing."""
    import atexit
    import threading

    if threading.active_count() > 1:
        return
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe: leave as the normal exit would report it
        return
    os._exit(code or 0)
