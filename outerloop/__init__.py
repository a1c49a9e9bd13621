"""outerloop: a stateless kernel that runs autonomous research agents.

The seams, each a ``typing.Protocol`` in its package's ``base.py``:

- ``compute.base.Compute``: submit, observe (in bulk), find by name, cancel jobs.
- ``forge.base.Forge``: issues, comments, pull requests, branches on a code host.
- ``harness.base.Harness``: run one agent session (a leg) and report how it ended.

Everything else is a pure planner over typed state (``lanes/``) or the one executor
that performs effects with write-ahead intents (``executor.py``).
"""

__version__ = "0.1.0"


def _skip_pydantic_plugin_scan() -> None:
    """pydantic looks for plugins by reading the entry points of every installed
    distribution when it builds its first model: ~45 ms per process with 129 installed,
    a tenth of a quiet tick. outerloop uses none, so it tells pydantic there are none
    (its own cache of found plugins), unless the operator set
    ``PYDANTIC_DISABLE_PLUGINS`` (pydantic's switch), which is then theirs to keep. Not
    the switch itself: set here, every job and session started from this process would
    inherit it."""
    import os

    if "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # another pydantic layout: it scans, as it would anyway
        return
    if getattr(_loader, "_plugins", False) is None:  # not scanned yet
        _loader._plugins = {}


_skip_pydantic_plugin_scan()
