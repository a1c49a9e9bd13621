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
    a tenth of a quiet tick. outerloop's processes use none, so pydantic is told there
    are none (its own record of the plugins it found). Not its switch,
    ``PYDANTIC_DISABLE_PLUGINS``: set here, every job and session started from this
    process would inherit it."""
    try:
        from pydantic.plugin import _loader
    except ImportError:  # another pydantic layout: it scans, as it would anyway
        return
    if getattr(_loader, "_plugins", False) is None:  # not scanned yet
        _loader._plugins = {}


_skip_pydantic_plugin_scan()
