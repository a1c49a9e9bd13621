"""Under CI=true a skipped service suite fails the run, with the skip's reason, run in one
process or on xdist workers (where collection and tests run in the workers and the
summary and exit status come from the controller)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = """
import pytest

@pytest.mark.browser
def test_needs_chromium():
    pytest.skip("chromium is not installed")

def test_plain_skip():
    pytest.skip("not relevant here")

def test_runs():
    pass
"""
MODULE_SKIP = """
import pytest
pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

def test_never():
    pass
"""


WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])


def _run(tmp_path: Path, ci: str | None, workers: list[str],
         suite: str = SUITE) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n  browser: x\n")
    (tmp_path / "test_suite.py").write_text(suite)
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "test_cluster.py").write_text(MODULE_SKIP)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.failclosed", "-rA",
                           "-p", "no:cacheprovider", *workers, str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


@WORKERS
def test_service_suite_skips_fail_the_run_with_the_reason_when_ci_is_true(
        tmp_path: Path, workers: list[str]) -> None:
    done = _run(tmp_path, "true", workers)
    assert done.returncode == 1, done.stdout
    assert ("the browser suite must run in CI, but it was skipped: chromium is not "
            "installed") in done.stdout
    assert "the slurm suite must run in CI" in done.stdout
    assert "OUTERLOOP_REAL_SLURM is not 1" in done.stdout
    assert "1 failed, 1 passed, 2 skipped" in done.stdout  # the other tests still ran


@WORKERS
def test_service_module_skipped_at_import_alone_fails_the_run_when_ci_is_true(
        tmp_path: Path, workers: list[str]) -> None:
    done = _run(tmp_path, "true", workers, suite="def test_runs():\n    pass\n")
    assert done.returncode == 1, done.stdout
    assert "the slurm suite must run in CI" in done.stdout
    assert "OUTERLOOP_REAL_SLURM is not 1" in done.stdout
    assert "1 passed, 1 skipped" in done.stdout


@WORKERS
def test_service_suite_skips_stay_skips_when_not_in_ci(tmp_path: Path,
                                                      workers: list[str]) -> None:
    done = _run(tmp_path, None, workers)
    assert done.returncode == 0, done.stdout
    assert "1 passed, 3 skipped" in done.stdout
