"""The rendered Slurm batch script and its ``sbatch`` argv, compared byte for byte with
golden files in ``tests/golden/``: a change to what every Slurm job runs shows up in a
diff a reviewer reads, never silently.

After a deliberate change: ``UPDATE_GOLDEN=1 python -m pytest -n 0
tests/unit/test_jobscript_golden.py`` rewrites the files; review and commit them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from outerloop.compute import jobscript
from outerloop.compute.spec import JobSpec

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
CALLER_ENV = {"PATH": "/opt/bin:/usr/bin", "LANG": "C.UTF-8", "TMPDIR": "/scratch/tmp",
              "GITHUB_TOKEN": "ghp_never_in_a_job", "HOME": "/home/operator"}

SPECS = {
    "plain": JobSpec(name="ol-r1-eval", command="python bench.py --seed 7",
                     workdir="/work/run 1/tree", log_dir="/work/run 1/logs/eval",
                     time_minutes=30),
    "array_gpu_setup": JobSpec(
        name="ol-r2-pairs", command='python eval.py --pair "$SLURM_ARRAY_TASK_ID"',
        workdir="/work/r2/tree", log_dir="/work/r2/logs/pairs", time_minutes=90, cpus=4,
        mem_mb=8000, gpus=1, gpu_request="gres", partition="gpu",
        account="lab", qos="normal", setup=("module load cuda/12", "source venv/bin/activate"),
        nice=10, array_size=6, array_concurrency=2, after_any=("4242",), singleton=True,
        requeue=False, env={"OUTERLOOP_SEED": "7", "HOME": "/work/r2/home"}),
}


def rendered(name: str) -> str:
    spec = SPECS[name]
    script = jobscript.render_script(spec, CALLER_ENV)
    argv = jobscript.sbatch_argv(spec, jobscript.script_path(spec))
    return f"# sbatch argv\n{chr(10).join(argv)}\n# script\n{script}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_rendered_job_script_matches_its_golden_file(name: str) -> None:
    path = GOLDEN / f"jobscript-{name}.txt"
    text = rendered(name)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run with UPDATE_GOLDEN=1 to write it"
    assert text == path.read_text(), (
        f"the rendered job script differs from {path}; if the change is meant, rewrite it "
        "with UPDATE_GOLDEN=1 and review the diff")


def test_no_caller_secret_reaches_any_golden_script() -> None:
    for name in SPECS:
        assert "ghp_never_in_a_job" not in rendered(name)
        assert "/home/operator" not in rendered(name)
