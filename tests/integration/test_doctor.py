"""`outerloop doctor` fails, naming the value and the fix, on the problems operators
hit first; `--json` for scripts; exit 1 only on a failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from outerloop.home import init_home
from tests.support import AGENTS


def local_home(tmp_path: Path, forge: str = "local") -> Path:
    home = tmp_path / "home"
    init_home(home, forge=forge, compute="local", harness="scripted", targets=["o/n"],
              script=str(AGENTS / "tinytsp-2opt.yaml"))
    return home


def doctor(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home),
                           *flags], capture_output=True, text=True, timeout=120)


def failures(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("FAIL")]


def test_doctor_passes_with_a_warning_when_no_tick_driver_is_installed_yet(
        tmp_path: Path) -> None:
    done = doctor(local_home(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert failures(done) == []
    assert any(line.startswith("warn  tick driver") and "-> fix: outerloop start" in line
               for line in done.stdout.splitlines())


def test_doctor_fails_naming_the_file_and_the_fix_when_the_forge_token_is_missing(
        tmp_path: Path) -> None:
    home = local_home(tmp_path, forge="github")
    done = doctor(home)
    assert done.returncode == 1
    (line,) = failures(done)
    assert "forge token" in line and str(home / "keys" / "forge-token") in line
    assert "-> fix:" in line and "chmod 600" in line


def test_doctor_fails_naming_the_mode_and_the_fix_when_the_home_is_world_writable(
        tmp_path: Path) -> None:
    home = local_home(tmp_path)
    home.chmod(0o777)
    done = doctor(home, "--json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    (check,) = [c for c in data["checks"] if c["status"] == "fail"]
    assert check["name"] == "home permissions" and "777" in check["detail"]
    assert check["fix"] == f"chmod go-w {home}"
