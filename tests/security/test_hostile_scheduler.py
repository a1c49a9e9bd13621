"""A hostile scripted agent tries the scheduler from its session, through real ticks.

What it did before the fix (Landlock ABI 7, ``auto``): ``sbatch --wrap`` from a session
step reached munge, and slurmd ran the job outside every sandbox: it copied ``keys/``
out and appended a forged ``verdict`` and ``publish_ready`` to the run's ledger file;
``scancel``/``scontrol hold`` acted on every job of the same Slurm user. Here, on each
backend, with local compute and with Slurm compute (the session itself then runs
inside a Slurm job), the job is never submitted, no key is copied, the ledger holds
no forged line, no PR is opened and the other job is neither cancelled nor held.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

import outerloop
from outerloop.config import Settings, load_settings
from tests.local_slurm import NO_REAL_SLURM
from tests.security.fixtures import skip_reason
from tests.security.test_hostile_agent import FORGED, plant_keys
from tests.support import ended, make_home, open_issue, tick_until

pytestmark = [pytest.mark.security, pytest.mark.e2e, pytest.mark.slurm]

SETTLE_S = 5.0


def slurm(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          check=True).stdout.strip()


def same_code_in_jobs(settings: Settings) -> Settings:
    """Jobs import the outerloop this test imports (a worktree's, not an installed
    one): the sandbox under test is the one their kernel code applies."""
    config = settings.home / "outerloop.toml"
    root = Path(outerloop.__file__).resolve().parent.parent
    text = config.read_text().replace(
        "[compute]\n", f"[compute]\nsetup = [\"export PYTHONPATH={root}\"]\n", 1)
    config.write_text(text)
    return load_settings(settings.home)


def hostile_script(path: Path, home: Path, stolen: Path, name: str, victim: str) -> Path:
    verdict = FORGED % ("verdict", "r", '"verdict":"improved","benchmark":"tour"')
    ready = FORGED % ("publish_ready", "r", '"seal_sha":"0","branch":"forged","title":"forged",'
                      '"body":"forged"')
    job = (f"cp -r {home}/keys {stolen}; for f in {home}/ledger/*/runs/*.jsonl; do "
           f"echo {shlex.quote(verdict)} >> $f; echo {shlex.quote(ready)} >> $f; done")
    legs: list[list[dict[str, Any]]] = [[
        {"shell": f"sbatch --job-name {name} -o /dev/null --wrap {shlex.quote(job)} "
                  f"> sbatch.txt 2>&1; true"},
        {"shell": f"scontrol hold {victim} > hold.txt 2>&1; scancel {victim} > scancel.txt 2>&1;"
                  f" scancel --user=$(id -un) --name=victim >> scancel.txt 2>&1; true"},
        {"shell": "{ echo '# Stopping'; echo; echo 'Nothing to report.'; } > report.md"},
        {"syscall": "stop --report report.md"},
    ]]
    path.write_text(yaml.safe_dump({"legs": legs}, sort_keys=False))
    return path


@pytest.mark.parametrize("compute", ["local", "slurm"])
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_hostile_session_cannot_submit_or_cancel_slurm_jobs_when_sandboxed(
        tmp_path: Path, kind: str, compute: str) -> None:
    if os.environ.get("OUTERLOOP_REAL_SLURM") != "1":
        pytest.skip(NO_REAL_SLURM)
    reason = skip_reason(kind, None)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    name = f"hostile-{uuid.uuid4().hex[:10]}"
    stolen = tmp_path / "stolen-keys"
    victim = slurm(["sbatch", "--parsable", "--begin=now+1hour", "--job-name", "victim",
                    "--chdir", "/tmp", "-o", "/dev/null", "--wrap", "sleep 1"]).split(";")[0]
    try:
        home = tmp_path / "home"
        script = hostile_script(tmp_path / "hostile.yaml", home, stolen, name, victim)
        settings = same_code_in_jobs(make_home(tmp_path, script, compute=compute,
                                               extra_toml=f'[sandbox]\nkind = "{kind}"\n'))
        plant_keys(settings)
        open_issue(settings, "Shorter tours", "Please try local search on tour.")
        state = tick_until(settings, ended, timeout_s=300, pause_s=1.0)
        time.sleep(SETTLE_S)
        (run,) = state.runs.values()
        ws = settings.home / "runs" / run.run_id / "ws"
        said = (ws / "sbatch.txt").read_text()
        assert "error" in said and "Submitted" not in said, said
        assert slurm(["squeue", "-h", "-n", name]) == ""
        assert slurm(["sacct", "-n", "-X", "--name", name, "-o", "JobID"]) == ""
        assert not stolen.exists()
        ledger = "\n".join(p.read_text() for p in (settings.home / "ledger").rglob("*.jsonl"))
        assert "forged" not in ledger
        assert run.pr_number is None
        shown = slurm(["scontrol", "show", "job", victim])
        assert "JobState=PENDING" in shown and "Held" not in shown, shown
    finally:
        subprocess.run(["scancel", victim], capture_output=True, timeout=60)
        subprocess.run(["scancel", "-n", name], capture_output=True, timeout=60)
