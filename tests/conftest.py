"""Shared fixtures. Tests build real homes, real git repositories and real processes."""

from __future__ import annotations

import os
import sys

import pytest

from tests.failclosed import (
    pytest_collectreport,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from tests.parallel import pytest_collection_modifyitems, slurm_node_lock

__all__ = ["pytest_collection_modifyitems", "pytest_collectreport", "pytest_runtest_makereport",
           "pytest_sessionfinish", "pytest_terminal_summary", "slurm_node_lock"]


def _interpreter_first_on_path() -> None:
    """Jobs find ``python`` on the ``PATH`` they inherit: the directory of the interpreter
    running the tests goes first, so a job's ``python`` is that interpreter itself, not a
    version manager's shim choosing it again (pyenv's runs ~5 processes, ~0.07 s of CPU,
    at each of a run's ~60 ``python`` starts: its benchmark sides, its agent's scripts)."""
    first = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != first:
        os.environ["PATH"] = os.pathsep.join([first, *[p for p in path.split(os.pathsep) if p]])


_interpreter_first_on_path()


def _kernel_compiled() -> None:
    """The kernel's modules are compiled once, before the workers start: with
    ``PYTHONDONTWRITEBYTECODE`` set (as on this machine kind) Python never writes
    bytecode, so in a fresh clone each of a suite's thousands of processes (ticks,
    zygotes, jobs started fresh, sandboxed benchmarks) compiled every module it
    imported (an e2e run: ~1 s of its ~12 s of CPU). ``compileall`` writes them anyway
    and compiles only what changed."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import compileall

    compileall.compile_dir(os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "outerloop"), quiet=1)


_kernel_compiled()


@pytest.fixture(autouse=True)
def _no_inherited_outerloop_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own OUTERLOOP_* settings never leak into a test's home."""
    for name in list(os.environ):
        if name.startswith("OUTERLOOP_") and name not in (
                "OUTERLOOP_REAL_SLURM", "OUTERLOOP_SLURM_CLUSTER", "OUTERLOOP_SLURM_PARTITION",
                "OUTERLOOP_SLURM_NODE", "OUTERLOOP_SLURM_QOS_LOW", "OUTERLOOP_SLURM_QOS_HIGH"):
            monkeypatch.delenv(name, raising=False)
