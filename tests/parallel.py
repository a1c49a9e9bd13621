"""The suite runs on pytest-xdist workers (``-n 5 --dist loadgroup`` in pyproject's
``addopts``; ``-n 0`` runs it in one process).

Each worker has its own ``tmp_path`` tree, and the servers tests start (the fake
GitHub, the scripted model servers, moto's S3) bind port 0, so most tests need nothing
more. Three things cannot be split per worker; tests that share one run in an xdist
group, one after the other on one worker:

- ``slurm``: tests that submit jobs to the one real Slurm (2 CPUs, 4 GPUs, one user's
  queue) directly: they count its GPUs, read ``squeue --me``, preempt, or wait a short
  while for a free CPU.
- ``slurm-runs``: whole research runs (marked ``e2e``) whose jobs go to that Slurm. They
  only queue short jobs and wait minutes, so they may overlap the ``slurm`` group, but
  not each other: at most two tests use the cluster at once.
- a test that names its own group (``@pytest.mark.xdist_group(NAME)``), e.g. the tests
  whose agent starts CPU spinners on purpose: one such test at a time.
- a module's tests that share a module-scoped fixture (a whole run played once, a
  venv built once): one group per module, so the fixture is built once, not once on
  every worker that runs one of them.

A test uses the real Slurm when its ``compute`` parameter is ``"slurm"`` or, without such
a parameter, when it is marked ``slurm`` (every test in ``tests/slurm/`` is; a module
marked ``slurm`` may hold ``compute="local"`` variants, which run anywhere).

A test that downs the one node (marked ``node_down``) runs with no other test that uses
the real Slurm beside it, whichever group that test is in: every such test holds a
shared lock on ``NODE_LOCK`` while it runs, a ``node_down`` test an exclusive one
(``slurm_node_lock``). Beside the node-failure run, a time-limit job read
``interrupted`` and a run's launch job never ran.

Long tests start first: whole runs (``e2e``) are collected first, then the suites in
``SLOW_FIRST`` order, so the short unit tests fill the workers at the end instead of
one long run finishing alone after everything else. (``--dist loadgroup`` hands out the
groups before single tests, biggest first.)

Loaded by ``tests/conftest.py`` (its hooks are re-exported there).
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SLURM_GROUP = "slurm"
"""Tests that submit to the real Slurm directly."""
SLURM_RUNS_GROUP = "slurm-runs"
"""Whole research runs whose jobs go to the real Slurm."""

SLOW_FIRST = ("e2e", "security", "harness", "slurm", "archive", "integration", "github",
              "unit")
"""``tests/<name>/`` folders in the order they are collected: slowest first."""


NODE_LOCK = Path(tempfile.gettempdir()) / "outerloop-tests-slurm-node.lock"
"""Held shared by every test that uses the real Slurm, exclusively by a ``node_down``
test (one machine, one node: every worker and suite on it shares the file)."""


@pytest.fixture(autouse=True)
def slurm_node_lock(request: pytest.FixtureRequest) -> Iterator[None]:
    """Around a test that uses the real Slurm: ``NODE_LOCK``, exclusive for a test
    marked ``node_down``, shared for the others; nothing for the rest."""
    item = request.node
    if not isinstance(item, pytest.Item) or not uses_real_slurm(item):
        yield
        return
    mode = fcntl.LOCK_EX if item.get_closest_marker("node_down") else fcntl.LOCK_SH
    with open(NODE_LOCK, "a+") as handle:
        fcntl.flock(handle, mode)
        yield


def uses_real_slurm(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    compute = callspec.params.get("compute") if callspec is not None else None
    if compute is not None:
        return bool(compute == "slurm")
    return item.get_closest_marker("slurm") is not None


def _suite(item: pytest.Item) -> str | None:
    """The ``tests/<name>/`` folder ``item`` lives in, when it is one of ``SLOW_FIRST``."""
    folders = item.nodeid.split("::")[0].split("/")[:-1]
    return next((name for name in folders if name in SLOW_FIRST), None)


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module"
               for name, defs in info.name2fixturedefs.items() if name in item.fixturenames)


def group_of(item: pytest.Item) -> str | None:
    """The xdist group ``item`` is put in, or None when any worker may run it (or when
    it names its own with an ``xdist_group`` mark)."""
    if item.get_closest_marker("xdist_group") is not None:
        return None
    if uses_real_slurm(item):
        return SLURM_RUNS_GROUP if item.get_closest_marker("e2e") else SLURM_GROUP
    if _shares_a_module_fixture(item):
        return item.nodeid.split("::")[0]
    return None


def _start_order(item: pytest.Item) -> tuple[int, int]:
    suite = _suite(item)
    rank = SLOW_FIRST.index(suite) if suite is not None else len(SLOW_FIRST)
    return (0 if item.get_closest_marker("e2e") else 1, rank)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Runs before xdist's own hook, which reads the ``xdist_group`` marks."""
    for item in items:
        if _suite(item) == "slurm":
            item.add_marker(pytest.mark.slurm)
        group = group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=_start_order)
