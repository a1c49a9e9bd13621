"""A job's command (``attempt``) and the tick import what they run, not the status view:
every job and every tick is a Python start that pays for its command module's imports
(``cli/group.py`` loads one module per command)."""

from __future__ import annotations

import subprocess
import sys

import pytest

VIEW_MODULES = ("outerloop.cli.status_cmd", "outerloop.leaderboard", "outerloop.lessons",
                "outerloop.line_status")


@pytest.mark.parametrize("command_module", ["kernel_cmd", "attempt_cmd"])
def test_the_tick_and_a_jobs_command_do_not_import_the_status_view(
        command_module: str) -> None:
    probe = (f"import sys, outerloop.cli.group, outerloop.cli.{command_module}; "
             f"print(sorted(m for m in {VIEW_MODULES!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"
