"""The ``slurm`` suite runs against a real Slurm (``deploy/local-slurm/start.sh``).

Every module here is skipped, with the reason printed, unless ``OUTERLOOP_REAL_SLURM``
is ``1`` (the start script's env file sets it). Every test here is marked ``slurm`` and
runs in the xdist group of the real Slurm (``tests/parallel.py``).
"""

from __future__ import annotations

import os

import pytest

from tests.local_slurm import NO_REAL_SLURM

REASON = NO_REAL_SLURM


def pytest_report_header(config: pytest.Config) -> str | None:
    if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
        return f"tests/slurm skipped: {REASON}"
    return None
