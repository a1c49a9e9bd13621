"""``outerloop start --mode resident`` on the real local Slurm: the dry run prints a
line sbatch accepts, and a chain hands over to exactly one successor."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.compute import jobscript
from outerloop.config import Settings, environ, load_settings
from outerloop.home import init_home
from outerloop.kernel.start import resident_name, resident_spec

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Settings]:
    init_home(tmp_path / "home", forge="local", compute="slurm", harness="scripted",
              targets=[], script=None)
    settings = load_settings(tmp_path / "home")
    yield settings
    subprocess.run(["scancel", f"--name={resident_name(settings.home)}"], check=False)


def outerloop(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "start", "--home",
                           str(settings.home), *args], capture_output=True, text=True,
                          check=True, timeout=120)


def chain(settings: Settings) -> list[tuple[str, str]]:
    out = subprocess.run(["squeue", "--me", "--noheader", "-n", resident_name(settings.home),
                          "-o", "%i|%T"], capture_output=True, text=True, check=True).stdout
    return [tuple(line.split("|")) for line in out.split()]  # type: ignore[misc]


def test_dry_run_prints_an_sbatch_line_that_slurm_accepts_when_the_mode_is_resident(
        home: Settings) -> None:
    line = outerloop(home, "--mode", "resident", "--dry-run").stdout.strip()
    argv = shlex.split(line)
    assert argv[0] == "sbatch" and "--dependency=singleton" in argv
    assert f"--job-name={resident_name(home.home)}" in argv
    assert chain(home) == []
    spec = resident_spec(home, 720)
    spec.log_path.mkdir(parents=True)
    jobscript.script_path(spec).write_text(jobscript.render_script(spec, environ()))
    checked = subprocess.run([argv[0], "--test-only", *argv[1:]], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    assert "to start at" in checked.stderr


def test_chain_has_exactly_one_job_after_a_handover_when_the_walltime_is_short(
        home: Settings) -> None:
    started = outerloop(home, "--mode", "resident", "--walltime-minutes", "1",
                        "--cadence-seconds", "2").stdout
    first = started.split("job ", 1)[1].split()[0]
    again = outerloop(home, "--mode", "resident", "--walltime-minutes", "1").stdout
    assert "already runs" in again and len(chain(home)) == 1
    deadline = time.monotonic() + 120
    seen: list[list[tuple[str, str]]] = []
    while time.monotonic() < deadline:
        now = chain(home)
        seen.append(now)
        if now and all(job != first for job, _ in now) and now[0][1] == "RUNNING":
            break
        time.sleep(1)
    else:
        raise AssertionError(f"no handover seen: {seen[-5:]}")
    assert len(chain(home)) == 1
    assert max(sum(state == "RUNNING" for _, state in rows) for rows in seen) == 1
    log = (home.home / "resident" / "stdout").read_text()
    assert "handover: successor" in log and "tick exit 0" in log
    assert (home.home / "heartbeat.json").exists()
