"""init, status (text and JSON), pause and resume as an operator runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", *args], capture_output=True,
                          text=True, check=False, timeout=60)


def test_init_creates_private_home_with_ledger_repo_when_flags_given(tmp_path: Path) -> None:
    home = tmp_path / "h"
    done = _cli("init", "--home", str(home), "--forge", "local", "--compute", "local",
                "--harness", "scripted", "--target", "owner/name")
    assert done.returncode == 0, done.stderr
    assert (home / "ledger" / ".git").is_dir()
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    assert oct((home / "keys").stat().st_mode & 0o777) == "0o700"
    assert 'repo = "owner/name"' in (home / "outerloop.toml").read_text()


def test_init_refuses_to_overwrite_config_when_home_exists(tmp_path: Path) -> None:
    home = tmp_path / "h"
    _cli("init", "--home", str(home))
    done = _cli("init", "--home", str(home), "--forge", "github")
    assert done.returncode == 1 and "already exists" in done.stderr
    assert 'kind = "local"' in (home / "outerloop.toml").read_text()


def test_status_json_reports_runs_and_pause_when_asked(tmp_path: Path) -> None:
    home = tmp_path / "h"
    _cli("init", "--home", str(home))
    assert _cli("pause", "--home", str(home)).returncode == 0
    data = json.loads(_cli("status", "--home", str(home), "--json").stdout)
    assert data["paused"] is True and data["runs"] == [] and data["malformed_lines"] == 0
    assert _cli("resume", "--home", str(home)).returncode == 0
    assert json.loads(_cli("status", "--home", str(home), "--json").stdout)["paused"] is False
