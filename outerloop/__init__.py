"""outerloop: a stateless kernel that runs autonomous research agents.

The seams, each a ``typing.Protocol`` in its package's ``base.py``:

- ``compute.base.Compute``: submit, observe (in bulk), find by name, cancel jobs.
- ``forge.base.Forge``: issues, comments, pull requests, branches on a code host.
- ``harness.base.Harness``: run one agent session (a leg) and report how it ended.

Everything else is a pure planner over typed state (``lanes/``) or the one executor
that performs effects with write-ahead intents (``executor.py``).
"""

__version__ = "0.1.0"


import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

_PLUGIN_LOADER = "pydantic.plugin._loader"


class _NoPydanticPluginScan:
    """pydantic looks for plugins by reading the entry points of every installed
    distribution when it builds its first validator: ~45 ms per process with 129
    installed, a tenth of a quiet tick. outerloop's processes use none, so pydantic is
    told there are none (its own record of the plugins it found, ``_plugins``). Not its
    switch, ``PYDANTIC_DISABLE_PLUGINS``: set here, every job and session started from
    this process would inherit it.

    Told when pydantic imports that module, not before: importing it pulls in
    ``importlib.metadata`` (~11 ms), and a quiet tick builds no validator (the settings
    and contracts it validated before are read back, ``validated.py``), so it never
    does. A finder on ``sys.meta_path`` that answers for that one module, once."""

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None, /) -> ModuleSpec | None:
        if name != _PLUGIN_LOADER:
            return None
        sys.meta_path.remove(self)
        spec = PathFinder.find_spec(name, path)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None:  # another pydantic layout: it scans, as before
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            if getattr(module, "_plugins", False) is None:  # not scanned yet
                module._plugins = {}  # type: ignore[attr-defined]

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _PLUGIN_LOADER not in sys.modules:
    sys.meta_path.insert(0, _NoPydanticPluginScan())
elif getattr(sys.modules[_PLUGIN_LOADER], "_plugins", False) is None:
    sys.modules[_PLUGIN_LOADER]._plugins = {}  # type: ignore[attr-defined]
