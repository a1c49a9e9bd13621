"""outerloop refuses to target its own repository, whatever the contract says: a copy
running from a checkout whose remote is ``acme/outerloop`` never reads or claims from a
target of that name (the tick skips it with the reason), and ``doctor`` fails on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import load_settings
from outerloop.home import init_home
from outerloop.selfrepo import repo_of_url
from tests.support import AGENTS, EXAMPLE_TARGET, REPO_ROOT, forge

OWN = "acme/outerloop"


@pytest.mark.parametrize(("url", "repo"), [
    ("https://github.com/acme/outerloop.git", OWN),
    ("https://github.com/acme/outerloop", OWN),
    ("git@github.com:acme/outerloop.git", OWN),
    ("ssh://git@git.lab.edu:2222/acme/outerloop.git/", OWN),
    ("https://gitlab.lab.edu/group/acme/outerloop.git", OWN),
    ("/srv/git/acme/outerloop.git", None),
    ("../outerloop", None),
    ("https://github.com/outerloop", None),
])
def test_a_remote_url_names_its_repository_when_it_is_a_forge_url(
        url: str, repo: str | None) -> None:
    assert repo_of_url(url) == repo


def kernel_checkout(tmp_path: Path, remote: str) -> Path:
    """This outerloop as a checkout of its own whose origin is ``remote``."""
    root = tmp_path / "kernel"
    shutil.copytree(REPO_ROOT / "outerloop", root / "outerloop",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", remote], check=True)
    return root


def run_copy(kernel: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTERLOOP_")}
    env["PYTHONPATH"] = str(kernel)
    return subprocess.run([sys.executable, "-m", "outerloop", *args], capture_output=True,
                          text=True, timeout=300, check=False, env=env, cwd=kernel)


def test_the_kernels_own_repository_is_never_claimed_from_and_doctor_fails_on_it(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted",
              targets=[OWN, "demo/tinytsp"], script=str(AGENTS / "tinytsp-2opt.yaml"))
    settings = load_settings(home)
    local = forge(settings)
    for repo in (OWN, "demo/tinytsp"):
        local.import_repo(EXAMPLE_TARGET, repo)
        local.open_issue_as(repo, "Shorter tours", "Please try local search on tour.",
                            "maintainer")
    kernel = kernel_checkout(tmp_path, f"https://github.com/{OWN}.git")
    done = run_copy(kernel, "tick", "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"target {OWN} is outerloop's own repository; fix: remove it from the targets" \
        in done.stdout
    runs = json.loads(run_copy(kernel, "status", "--json", "--home", str(home)).stdout)["runs"]
    assert [r["target"] for r in runs] == ["demo/tinytsp"]  # the other target goes on
    assert local.list_comments(OWN, 1) == []  # no claim, no alarm: never touched
    doctor = run_copy(kernel, "doctor", "--json", "--home", str(home))
    (check,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "contracts"]
    assert doctor.returncode == 1 and check["status"] == "fail"
    assert f"{OWN} is outerloop's own repository" in check["detail"]
