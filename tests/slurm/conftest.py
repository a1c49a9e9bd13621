"""The ``slurm`` suite runs against a real Slurm (``shared/slurm/start-local-slurm.sh``).

Every module here is skipped, with the reason printed, unless ``OUTERLOOP_REAL_SLURM``
is ``1`` (the start script's env file sets it). Every test here is marked ``slurm`` and
runs in the xdist group of the real Slurm (``tests/parallel.py``).
"""

from __future__ import annotations

import os

import pytest

REASON = ("no real Slurm: OUTERLOOP_REAL_SLURM is not 1 (run shared/slurm/"
          "start-local-slurm.sh, then `set -a; . /run/local-slurm/env; set +a`)")


def pytest_report_header(config: pytest.Config) -> str | None:
    if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
        return f"tests/slurm skipped: {REASON}"
    return None
