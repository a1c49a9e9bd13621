"""The wake's views agree with its prompt on a real Slurm (issue 48 point 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.test_wake_views import SCRIPT, views_agree_with_the_wake
from tests.local_slurm import NO_REAL_SLURM
from tests.support import ended, make_home, open_issue, tick_until

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip(NO_REAL_SLURM, allow_module_level=True)

pytestmark = pytest.mark.e2e  # a whole run: the slurm-runs group


def test_history_at_a_slurm_wake_says_how_the_launch_ended(tmp_path: Path) -> None:
    settings = make_home(tmp_path, SCRIPT, compute="slurm")
    open_issue(settings, "Shorter tours", "Try something on tour.")
    views_agree_with_the_wake(settings, tick_until(settings, ended, timeout_s=300))
