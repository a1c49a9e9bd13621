"""`outerloop doctor` as a preflight on a home using the real local Slurm (4 stand-in
GPUs on one node): every placement, each benchmark's real request, the setup lines and
the sandbox in a real job, pass_env where the driver runs the tick, the review panel's
dry run. Each failure names the field and the fix, and exits 1."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import EXAMPLE_TARGET, TINYCLF, make_home

if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
    pytest.skip("no real Slurm: OUTERLOOP_REAL_SLURM is not 1", allow_module_level=True)

PARTITION = os.environ.get("OUTERLOOP_SLURM_PARTITION", "debug")
NODE_GPUS = int(os.environ.get("OUTERLOOP_SLURM_GPUS", "4"))


def slurm_home(tmp_path: Path, compute_toml: str = "", *, target_dir: Path = EXAMPLE_TARGET,
               script: str = "tinytsp-2opt.yaml", judge: Path | None = None) -> Path:
    """A slurm home whose target (tinytsp) is in the local forge, with a judge that
    fits it; ``compute_toml`` goes at the top of ``[compute]``."""
    home = make_home(tmp_path, script, compute="slurm", target_dir=target_dir,
                     **({"judge": judge} if judge else {})).home
    text = (home / "outerloop.toml").read_text().replace(
        'kind = "slurm"\n', f'kind = "slurm"\n{compute_toml}')
    (home / "outerloop.toml").write_text(text)
    return home


def doctor(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home),
                           *flags], capture_output=True, text=True, timeout=300)


def failing(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("FAIL")]


def test_doctor_passes_when_the_home_uses_the_local_slurm(tmp_path: Path) -> None:
    home = slurm_home(tmp_path, f'partition = "{PARTITION}"\n'
                      '[compute.eval]\nqos = "high"\n[compute.launch]\nqos = "low"\n')
    done = doctor(home)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for name in ("home permissions", "flock", "disk", "git", "slurm sbatch", "slurm sacct",
                 "slurm accounting", "slurm placement (kernel)", "forge", "harness (scripted)",
                 "contracts", "slurm placement (eval: demo/tinytsp tour, spread)",
                 "review panel", "pass_env", "compute setup", "sandbox on a compute node"):
        assert any(line.startswith("ok") and f"  {name}:" in line for line in lines), name
    eval_line = next(line for line in lines if "slurm placement (eval" in line)
    assert "--qos=high" in eval_line and f"--partition={PARTITION}" in eval_line
    node = next(line for line in lines if "sandbox on a compute node" in line)
    # (a root kernel's children name their uid: [sandbox] child_user)
    assert re.search(r"a confined child( \(uid \d+\))? was refused", node), node
    assert "after submission)" in node
    assert any(line.startswith("warn  tick driver") for line in lines)


def test_doctor_fails_naming_the_benchmark_field_when_no_node_has_its_gpus(
        tmp_path: Path) -> None:
    target = tmp_path / "target"
    shutil.copytree(EXAMPLE_TARGET, target)
    contract = target / ".outerloop.yaml"
    contract.write_text(contract.read_text().replace(
        "    eval_minutes: 5\n", f"    eval_minutes: 5\n    gpus: {2 * NODE_GPUS}\n", 1))
    home = slurm_home(tmp_path, target_dir=target)
    done = doctor(home, "--quick")
    assert done.returncode == 1
    lines = [ln for ln in failing(done) if "benchmarks[0].gpus" in ln]
    assert lines, done.stdout
    eval_line = next(ln for ln in lines if "slurm placement (eval: demo/tinytsp tour)" in ln)
    assert f"benchmarks[0].gpus = {2 * NODE_GPUS} (tour)" in eval_line
    assert f"the most is {NODE_GPUS}" in eval_line
    assert f"-> fix: lower benchmarks[0].gpus to at most {NODE_GPUS}" in eval_line
    assert not any("spread" in ln for ln in failing(done))


def test_doctor_fails_quoting_the_setup_line_when_it_fails_on_a_compute_node(
        tmp_path: Path) -> None:
    home = slurm_home(tmp_path, 'setup = ["module load cuda/12.4"]\n')
    done = doctor(home)
    assert done.returncode == 1
    (line,) = [ln for ln in failing(done) if "  compute setup:" in ln]
    assert "[compute] setup line 1 failed: module load cuda/12.4" in line
    assert str(home / "cache" / "doctor" / "node") in line and "stderr" in line
    assert "-> fix:" in line and "[compute] setup" in line
    sandbox = next(ln for ln in done.stdout.splitlines() if "sandbox on a compute node" in ln)
    assert sandbox.startswith("warn") and "not proved" in sandbox


def test_doctor_fails_naming_the_variable_when_the_cron_driver_would_not_set_it(
        tmp_path: Path) -> None:
    home = slurm_home(tmp_path, 'pass_env = ["DOCTOR_PROBE_PROXY"]\n')
    env = {k: v for k, v in os.environ.items() if k != "DOCTOR_PROBE_PROXY"}
    done = subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home),
                           "--quick", "--driver", "cron"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 1
    (line,) = failing(done)
    assert "pass_env (cron):" in line and "DOCTOR_PROBE_PROXY not set" in line
    assert "crontab" in line.split("-> fix:")[1]
    every = subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home),
                            "--quick"], capture_output=True, text=True, timeout=300, env=env)
    drivers = {ln.split("pass_env (")[1].split(")")[0] for ln in failing(every)}
    assert drivers == {"cron", "systemd", "resident", "files"}


def test_doctor_fails_the_compute_node_sandbox_when_the_job_cannot_prove_it(
        tmp_path: Path) -> None:
    home = slurm_home(tmp_path)
    config = home / "outerloop.toml"
    config.write_text(config.read_text() + '\n[sandbox]\nkind = "off"\n')
    done = doctor(home)
    assert done.returncode == 1
    (line,) = [ln for ln in failing(done) if "  sandbox on a compute node:" in ln]
    assert "SANDBOX OFF" in line and "(job " in line
    assert any(ln.startswith("ok    compute setup:") for ln in done.stdout.splitlines())


def test_doctor_fails_quoting_the_judge_when_it_cannot_give_a_verdict_on_the_target(
        tmp_path: Path) -> None:
    judge = tmp_path / "judge-tinytsp-only.yaml"  # a judge that fits tinytsp alone
    judge.write_text('legs:\n  - - expect: "review panel"\n'
                     '    - shell: "test -f base/solver/tour.py"\n'
                     '    - write: {path: verdict.json, content: \'{"verdict": "approve"}\'}\n')
    home = slurm_home(tmp_path, target_dir=TINYCLF, script="tinyclf-knn.yaml", judge=judge)
    done = doctor(home)
    assert done.returncode == 1
    (line,) = [ln for ln in failing(done) if "  review panel:" in ln]
    assert "judge-1 produced no verdict" in line and "base/solver/tour.py" in line
    assert str(home / "cache" / "doctor" / "review") in line


def test_doctor_fails_naming_the_partition_and_the_fix_when_it_does_not_exist(
        tmp_path: Path) -> None:
    home = slurm_home(tmp_path, '[compute.eval]\npartition = "nopart"\n')
    done = doctor(home, "--quick")
    assert done.returncode == 1
    (line,) = failing(done)
    assert "slurm placement (eval: demo/tinytsp tour, spread)" in line
    assert "--partition=nopart" in line
    assert "invalid partition" in line.lower() and "-> fix: fix [compute.eval]" in line
    data = json.loads(doctor(home, "--json", "--quick").stdout)
    assert data["ok"] is False
    assert [c["name"] for c in data["checks"] if c["status"] == "fail"] == [
        "slurm placement (eval: demo/tinytsp tour, spread)"]
    with_jobs = doctor(home)
    assert any("compute setup (partition nopart)" in ln and "could not be submitted" in ln
               for ln in failing(with_jobs)), with_jobs.stdout


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
            f'"http://127.0.0.1:{server.server_address[1]}"', 1))
        (check,) = check_endpoint_from_compute(load_settings(home))
        assert check.status == "ok" and "answered 404" in check.detail, check.line()
    finally:
        server.shutdown()
    (check,) = check_endpoint_from_compute(load_settings(home))
    assert check.status == "fail" and "no answer" in check.detail
    assert "pass_env" in check.fix


@pytest.fixture
def short_partition() -> Iterator[str]:
    """A partition of the local node whose time limit is 30 minutes (the local Slurm
    does not enforce partition limits at submission: such a job would pend forever)."""
    name = f"ol-short-{os.getpid()}"
    subprocess.run(["scontrol", "create", f"partitionname={name}", "nodes=ALL",
                    "maxtime=30"], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["scontrol", "delete", f"partitionname={name}"], check=False,
                       capture_output=True)


@pytest.mark.parametrize("kind,fix", [
    ("kernel", "--walltime-minutes N"), ("session", "[compute.session] partition")])
def test_doctor_fails_a_partition_whose_time_limit_is_below_what_the_kind_asks(
        tmp_path: Path, short_partition: str, kind: str, fix: str) -> None:
    """The resident chain asks 720 min, climb and wake jobs 120: a partition allowing
    30 fails the kind's placement with a fix that is not a cap below need (issue 51);
    a kernel cap within the limit passes."""
    from outerloop.config import load_settings
    from outerloop.doctor.slurm import CPU_KINDS, check_kind_placements

    home = slurm_home(tmp_path, f'[compute.{kind}]\npartition = "{short_partition}"\n')
    (line,) = [c for c in check_kind_placements(load_settings(home), CPU_KINDS)
               if c.name == f"slurm placement ({kind})"]
    assert line.status == "fail", line.line()
    assert f"partition {short_partition} allows 30 min" in line.detail, line.line()
    assert fix in line.fix, line.line()
    if kind == "kernel":
        capped = slurm_home(tmp_path / "capped", f'[compute.kernel]\npartition = '
                            f'"{short_partition}"\ntime_minutes = 30\n')
        (ok_line,) = [c for c in check_kind_placements(load_settings(capped), CPU_KINDS)
                      if c.name == "slurm placement (kernel)"]
        assert ok_line.status == "ok", ok_line.line()
