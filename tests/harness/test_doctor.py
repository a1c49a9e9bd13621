"""`outerloop doctor` with the real CLIs installed and a scripted model endpoint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.conftest import cli_home
from tests.harness.models import AnthropicModel

pytestmark = pytest.mark.harness


def _doctor(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home)],
                          capture_output=True, text=True, timeout=120)


def test_doctor_passes_when_binary_key_and_endpoint_are_there(
        tmp_path: Path, claude_bin: str) -> None:
    with AnthropicModel([]) as model:
        settings = cli_home(tmp_path, "claude", claude_bin, model.url)
        done = _doctor(settings.home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok    harness (claude) binary" in done.stdout and "2.1.332" in done.stdout
    assert "ok    model endpoint" in done.stdout


def test_doctor_fails_with_fix_hints_when_binary_and_endpoint_are_missing(
        tmp_path: Path, claude_bin: str) -> None:
    with AnthropicModel([]) as model:
        url = model.url
    settings = cli_home(tmp_path, "claude", str(tmp_path / "no-such-claude"), url)
    done = _doctor(settings.home)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    binary = next(line for line in lines if "binary" in line)
    endpoint = next(line for line in lines if "model endpoint" in line)
    assert binary.startswith("FAIL") and "-> fix: npm install" in binary
    assert endpoint.startswith("FAIL") and "-> fix:" in endpoint
