"""The suite on xdist workers (tests/parallel.py): tests that share the one real Slurm,
a module fixture or a named group run in one xdist group, and long tests start first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SLURM_SUITE = """
def test_queue():
    pass

def test_gpus():
    pass
"""
MIXED = """
import pytest

pytestmark = pytest.mark.slurm

@pytest.mark.parametrize("compute", ["local", "slurm"])
def test_job_attack(compute):
    pass

@pytest.mark.e2e
@pytest.mark.parametrize("compute", ["local", "slurm"])
def test_run_attack(compute):
    pass

@pytest.mark.e2e
@pytest.mark.xdist_group("cpu-spinners")
@pytest.mark.parametrize("compute", ["local", "slurm"])
def test_spinners(compute):
    pass
"""
SHARED = """
import pytest

@pytest.fixture(scope="module")
def played():
    return 1

def test_reads_the_run(played):
    pass

def test_reads_it_again(played):
    pass

def test_needs_nothing():
    pass
"""
UNIT = "def test_fast():\n    pass\n"
E2E = "import pytest\n\n@pytest.mark.e2e\ndef test_whole_run():\n    pass\n"


def _suite(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n  slurm: x\n  e2e: y\n")
    for folder, name, text in (("unit", "test_fast.py", UNIT),
                               ("unit", "test_shared.py", SHARED),
                               ("slurm", "test_cluster.py", SLURM_SUITE),
                               ("security", "test_mixed.py", MIXED),
                               ("integration", "test_whole.py", E2E)):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / name).write_text(text)
    return tmp_path


def _pytest(tmp_path: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.parallel",
                           "-p", "no:cacheprovider", *args, str(tmp_path)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_tests_sharing_slurm_a_module_fixture_or_a_named_group_run_in_one_group(
        tmp_path: Path) -> None:
    out = _pytest(_suite(tmp_path), "-n", "2", "--dist", "loadgroup", "-v")
    passed = {line.split()[-1] for line in out.splitlines() if " PASSED " in line}
    assert passed == {
        "slurm/test_cluster.py::test_queue@slurm", "slurm/test_cluster.py::test_gpus@slurm",
        "security/test_mixed.py::test_job_attack[slurm]@slurm",
        "security/test_mixed.py::test_job_attack[local]",
        "security/test_mixed.py::test_run_attack[slurm]@slurm-runs",
        "security/test_mixed.py::test_run_attack[local]",
        "security/test_mixed.py::test_spinners[slurm]@cpu-spinners",
        "security/test_mixed.py::test_spinners[local]@cpu-spinners",
        "unit/test_shared.py::test_reads_the_run@unit/test_shared.py",
        "unit/test_shared.py::test_reads_it_again@unit/test_shared.py",
        "unit/test_shared.py::test_needs_nothing",
        "unit/test_fast.py::test_fast", "integration/test_whole.py::test_whole_run"}


def test_whole_runs_then_the_slow_suites_are_collected_first(tmp_path: Path) -> None:
    out = _pytest(_suite(tmp_path), "-n", "0", "--collect-only", "-q")
    tests = [line for line in out.splitlines() if "::" in line]
    assert tests[:4] == ["security/test_mixed.py::test_run_attack[local]",
                         "security/test_mixed.py::test_run_attack[slurm]",
                         "security/test_mixed.py::test_spinners[local]",
                         "security/test_mixed.py::test_spinners[slurm]"]
    assert tests[4] == "integration/test_whole.py::test_whole_run"
    files = list(dict.fromkeys(t.split("::")[0] for t in tests[5:]))
    assert files == ["security/test_mixed.py", "slurm/test_cluster.py", "unit/test_fast.py",
                     "unit/test_shared.py"]


NODE_SUITE = """
import os
import time

import pytest

pytestmark = pytest.mark.slurm


def _note(what):
    with open(os.environ["NODE_LOG"], "a") as log:
        log.write(f"{what} {time.time()}\\n")


@pytest.mark.node_down
@pytest.mark.xdist_group("a")
def test_downs_the_node():
    _note("down-start")
    time.sleep(1.5)
    _note("down-end")


@pytest.mark.xdist_group("b")
def test_uses_the_node():
    _note("use-start")
    time.sleep(1.5)
    _note("use-end")
"""


def test_a_test_that_downs_the_node_runs_with_no_other_slurm_test_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two groups on two workers: without the lock both tests sleep at once."""
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n  slurm: x\n  e2e: y\n  node_down: z\n")
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "test_node.py").write_text(NODE_SUITE)
    log = tmp_path / "node.log"
    monkeypatch.setenv("NODE_LOG", str(log))
    _pytest(tmp_path, "-n", "2", "--dist", "loadgroup")
    at = {what: float(when) for what, when in
          (line.split() for line in log.read_text().splitlines())}
    assert at["down-end"] <= at["use-start"] or at["use-end"] <= at["down-start"], at
