"""The suite runs on pytest-xdist workers (``-n`` and ``--dist loadgroup`` in pyproject's
``addopts``; ``-n 0`` runs it in one process).

Each worker has its own ``tmp_path`` tree, and servers the tests start (the fake
GitHub, the scripted model servers, moto's S3) bind port 0, so most tests need nothing
more. What cannot be split per worker is the one real Slurm (2 CPUs, 4 GPUs, one user's
queue): tests that submit to it count its GPUs, read ``squeue --me``, wait for free
CPUs or preempt one another's jobs, so they run in one xdist group, one after the other
on one worker. A test submits to the real Slurm when its ``compute`` parameter is
``"slurm"`` or, without such a parameter, when it is marked ``slurm`` (a module marked
``slurm`` may hold ``compute="local"`` variants: those run anywhere).

Long tests start first: the suites are collected slowest first (``SLOW_FIRST``), so
the short unit tests fill the workers at the end instead of one long end-to-end file
running alone after everything else.

Loaded by ``tests/conftest.py`` (its hooks are re-exported there).
"""

from __future__ import annotations

from pathlib import Path

import pytest

SLURM_GROUP = "slurm"
"""The xdist group of every test that submits to the real Slurm."""

SLOW_FIRST = ("e2e", "security", "harness", "slurm", "archive", "integration", "github",
              "unit")
"""``tests/<name>/`` folders in the order they are collected: slowest first."""

TESTS = Path(__file__).resolve().parent


def uses_real_slurm(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    compute = callspec.params.get("compute") if callspec is not None else None
    if compute is not None:
        return bool(compute == "slurm")
    return item.get_closest_marker("slurm") is not None


def _suite_rank(item: pytest.Item) -> int:
    try:
        folder = Path(str(item.path)).resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return len(SLOW_FIRST)
    return SLOW_FIRST.index(folder) if folder in SLOW_FIRST else len(SLOW_FIRST)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Runs before xdist's own hook, which reads the ``xdist_group`` marks."""
    for item in items:
        if "/tests/slurm/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.slurm)
        if uses_real_slurm(item):
            item.add_marker(pytest.mark.xdist_group(SLURM_GROUP))
    items.sort(key=_suite_rank)
