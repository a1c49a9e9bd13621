"""Shared fixtures. Tests build real homes, real git repositories and real processes."""

from __future__ import annotations

import os

import pytest

from tests.failclosed import (
    pytest_collectreport,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from tests.parallel import pytest_collection_modifyitems

__all__ = ["pytest_collection_modifyitems", "pytest_collectreport", "pytest_runtest_makereport",
           "pytest_sessionfinish", "pytest_terminal_summary"]


@pytest.fixture(autouse=True)
def _no_inherited_outerloop_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own OUTERLOOP_* settings never leak into a test's home."""
    for name in list(os.environ):
        if name.startswith("OUTERLOOP_") and name not in (
                "OUTERLOOP_REAL_SLURM", "OUTERLOOP_SLURM_CLUSTER", "OUTERLOOP_SLURM_PARTITION",
                "OUTERLOOP_SLURM_NODE", "OUTERLOOP_SLURM_QOS_LOW", "OUTERLOOP_SLURM_QOS_HIGH"):
            monkeypatch.delenv(name, raising=False)
