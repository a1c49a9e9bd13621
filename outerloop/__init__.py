"""outerloop: a stateless kernel that runs autonomous research agents.

The seams, each a ``typing.Protocol`` in its package's ``base.py``:

- ``compute.base.Compute``: submit, observe (in bulk), find by name, cancel jobs.
- ``forge.base.Forge``: issues, comments, pull requests, branches on a code host.
- ``harness.base.Harness``: run one agent session (a leg) and report how it ended.

Everything else is a pure planner over typed state (``lanes/``) or the one executor
that performs effects with write-ahead intents (``executor.py``).
"""

__version__ = "0.1.0"
