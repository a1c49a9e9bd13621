"""Tools every home needs: git."""

from __future__ import annotations

import re
import shutil

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok, run

MIN_GIT = (2, 30)


def check_git(settings: Settings) -> list[Check]:
    found = shutil.which("git")
    done = run([found, "--version"]) if found else None
    if done is None:
        return [fail("git", "git not found on PATH", "install git (apt-get install git)")]
    out = done.stdout.strip()
    match = re.search(r"(\d+)\.(\d+)", out)
    version = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    if version < MIN_GIT:
        return [fail("git", out or "unknown version",
                     f"install git >= {MIN_GIT[0]}.{MIN_GIT[1]}")]
    return [ok("git", out)]
