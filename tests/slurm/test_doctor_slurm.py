"""`outerloop doctor` as a preflight on a home using the real local Slurm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.home import init_home
from tests.support import AGENTS

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

PARTITION = os.environ.get("OUTERLOOP_SLURM_PARTITION", "debug")


def slurm_home(tmp_path: Path, compute_toml: str = "") -> Path:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="slurm", harness="scripted", targets=["o/n"],
              script=str(AGENTS / "tinytsp-2opt.yaml"))
    text = (home / "outerloop.toml").read_text().replace(
        'kind = "slurm"\n', f'kind = "slurm"\n{compute_toml}')
    (home / "outerloop.toml").write_text(text)
    return home


def doctor(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home),
                           *flags], capture_output=True, text=True, timeout=300)


def test_doctor_passes_when_the_home_uses_the_local_slurm(tmp_path: Path) -> None:
    home = slurm_home(tmp_path, f'partition = "{PARTITION}"\n'
                      '[compute.eval]\nqos = "high"\n[compute.launch]\nqos = "low"\n')
    done = doctor(home)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for name in ("home permissions", "flock", "disk", "git", "slurm sbatch", "slurm sacct",
                 "slurm accounting", "slurm placement (kernel)", "slurm placement (eval)",
                 "slurm placement (launch)", "forge", "harness (scripted)"):
        assert any(line.startswith("ok") and f"  {name}" in line for line in lines), name
    eval_line = next(line for line in lines if "slurm placement (eval)" in line)
    assert "--gpus-per-node=1" in eval_line and "--qos=high" in eval_line
    assert any(line.startswith("warn  tick driver") for line in lines)


def test_doctor_fails_naming_the_partition_and_the_fix_when_it_does_not_exist(
        tmp_path: Path) -> None:
    home = slurm_home(tmp_path, '[compute.eval]\npartition = "nopart"\n')
    done = doctor(home)
    assert done.returncode == 1
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("FAIL")]
    assert "slurm placement (eval)" in line and "--partition=nopart" in line
    assert "invalid partition" in line.lower() and "-> fix: fix [compute.eval]" in line
    data = json.loads(doctor(home, "--json").stdout)
    assert data["ok"] is False
    assert [c["name"] for c in data["checks"] if c["status"] == "fail"] == [
        "slurm placement (eval)"]


def test_doctor_reaches_the_model_endpoint_from_a_compute_node_when_sessions_need_it(
        tmp_path: Path) -> None:
    import http.server
    import threading

    from outerloop.config import load_settings
    from outerloop.doctor.harness import check_endpoint_from_compute

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        home = slurm_home(tmp_path)
        config = home / "outerloop.toml"
        config.write_text(config.read_text().replace(
            'kind = "scripted"', f'kind = "claude"\nbase_url = '
            f'"http://127.0.0.1:{server.server_address[1]}"'))
        (check,) = check_endpoint_from_compute(load_settings(home))
        assert check.status == "ok" and "answered 404" in check.detail, check.line()
    finally:
        server.shutdown()
    (check,) = check_endpoint_from_compute(load_settings(home))
    assert check.status == "fail" and "no answer" in check.detail
    assert "pass_env" in check.fix
