"""No tracked file keeps a merge's conflict markers (one was left in docs/security.md's
inventory after a merge, and both sides' rows read as rows)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_tracked_file_holds_conflict_markers() -> None:
    found = subprocess.run(
        ["git", "grep", "-n", "-I", "-E", r"^(<<<<<<< |>>>>>>> )", "--", ".",
         ":!tests/harness/node_modules"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert found.returncode in (0, 1), found.stderr
    assert found.stdout == ""
