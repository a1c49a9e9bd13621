"""Kernel git over candidate content runs no driver, whatever the tree's attributes say.

A candidate tree can carry a ``.gitattributes`` naming a ``filter``, ``diff`` or
``merge`` driver; git runs such a driver only when a config it reads defines it. The
kernel's git reads no global or system config (``localgit.git_env``) and its own
repositories' config is the kernel's, so the checkout for an eval, the diff the tamper
check and the judges read, and the local forge's merge and PR diff run nothing — even
on a machine whose operator's ``~/.gitconfig`` defines those drivers (git-lfs does).
The control shows the same drivers fire for a plain git that reads that config, so the
test fails the day ``git_env`` stops ignoring it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from outerloop.forge import localgit as g
from outerloop.forge.local import LocalForge
from outerloop.run import workspace
from outerloop.run.paths import RunPaths

pytestmark = pytest.mark.security

DRIVERS = """\
[filter "evil"]
\tclean = {driver}
\tsmudge = {driver}
\trequired = true
[diff "evil"]
\ttextconv = {driver}
\tcommand = {driver}
[merge "evil"]
\tdriver = {driver} %A
"""
DRIVER = """#!/bin/sh
touch '{canary}'
if [ -f "$1" ]; then cat "$1"; else cat; fi
"""


def _git(repo: Path, *args: str) -> str:
    """The fixture's own git: the operator's config (with the drivers) never read."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@t", *args], check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture()
def drivers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An operator HOME whose ~/.gitconfig defines the ``evil`` drivers; the canary path."""
    canary = tmp_path / "driver-ran"
    home = tmp_path / "operator-home"
    home.mkdir()
    driver = tmp_path / "driver.sh"
    driver.write_text(DRIVER.format(canary=canary))
    driver.chmod(0o755)
    (home / ".gitconfig").write_text(DRIVERS.format(driver=driver))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    return canary


@pytest.fixture()
def target(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository whose candidate branch's tree asks for the ``evil`` drivers."""
    repo = tmp_path / "target"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    base = _commit(repo, {"solver.py": "a = 1\nb = 2\nc = 3\n"}, "base")
    _git(repo, "checkout", "-qb", "cand")
    cand = _commit(repo, {".gitattributes": "* filter=evil diff=evil merge=evil\n",
                          "solver.py": "a = 10\nb = 2\nc = 3\n"}, "candidate")
    _git(repo, "checkout", "-q", "main")
    _commit(repo, {"solver.py": "a = 1\nb = 2\nc = 30\n"}, "main moves")
    return repo, base, cand


def test_the_drivers_fire_for_a_git_that_reads_the_operators_config(
        drivers: Path, target: tuple[Path, str, str], tmp_path: Path) -> None:
    """Control: the tree and the config really do run the drivers when git reads it."""
    repo, _, cand = target
    out = tmp_path / "plain-checkout"
    out.mkdir()
    subprocess.run(["git", "-C", str(repo), "--work-tree", str(out), "checkout", cand, "--",
                    "."], check=True, capture_output=True)
    assert drivers.exists()


def test_kernel_checkout_and_diff_of_a_candidate_run_no_driver_its_attributes_name(
        drivers: Path, target: tuple[Path, str, str], tmp_path: Path) -> None:
    repo, base, cand = target
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    g.git(["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", str(repo),
           str(paths.kernel)])
    g.git(["fetch", "--quiet", "--", str(repo), cand], git_dir=paths.kernel_git)
    dest = paths.tree("pair-1") / "b"
    workspace.checkout(paths, cand, dest)
    assert (dest / "solver.py").read_text() == "a = 10\nb = 2\nc = 3\n"
    assert "a = 10" in workspace.diff_text(paths, base, cand)
    assert workspace.read_at(paths, cand, "solver.py") == "a = 10\nb = 2\nc = 3\n"
    assert not drivers.exists(), "kernel git ran a driver named by the candidate's attributes"


def test_kernel_merge_onto_a_moved_base_runs_no_driver_the_candidate_names(
        drivers: Path, target: tuple[Path, str, str], tmp_path: Path) -> None:
    """The candidate's attributes name a merge driver; the kernel's merge of the credited
    candidate onto the moved base (``workspace.merge_onto``) and the bundle of the new
    base for its agent (``workspace.base_bundle``) run none."""
    repo, _, cand = target
    moved = _git(repo, "rev-parse", "main")
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    g.git(["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", str(repo),
           str(paths.kernel)])
    g.git(["fetch", "--quiet", "--", str(repo), cand], git_dir=paths.kernel_git)
    merged, conflicts = workspace.merge_onto(paths, "run-branch", moved, cand)
    assert conflicts == []
    assert workspace.read_at(paths, merged, "solver.py") == "a = 10\nb = 2\nc = 30\n"
    paths.ws.mkdir()
    workspace.base_bundle(paths, moved, cand)
    assert (paths.ws / ".outerloop" / "base.bundle").read_bytes().startswith(b"# v2 git bundle")
    assert not drivers.exists(), "kernel git ran a driver named by the candidate's attributes"


def test_local_forge_merge_and_pr_diff_run_no_driver_the_candidate_names(
        drivers: Path, target: tuple[Path, str, str], tmp_path: Path) -> None:
    repo, _, _ = target
    forge = LocalForge(tmp_path / "forge", "outerloop")
    forge.import_repo(repo, "me/t", default_branch="main", as_user="maintainer")
    pr = forge.open_pr_as("me/t", "cand", "main", "candidate", "body", "maintainer")
    assert "a = 10" in forge.diff_pr("me/t", pr.number)
    merged = forge.merge_pr("me/t", pr.number, as_user="maintainer")
    assert forge.read_file("me/t", "solver.py", merged) == b"a = 10\nb = 2\nc = 30\n"
    assert not drivers.exists(), "the forge's git ran a driver named by the candidate's attributes"


def test_kernel_patches_of_wins_to_combine_run_no_driver_the_candidate_names(
        drivers: Path, target: tuple[Path, str, str], tmp_path: Path) -> None:
    """A combination run's wins (``run/wins.py``): the candidate's PR head fetched into
    the kernel's clone and diffed from its merge base run no driver its attributes name."""
    from outerloop.run.wins import write_wins

    repo, base, _ = target
    forge = LocalForge(tmp_path / "forge", "outerloop")
    forge.import_repo(repo, "me/t", default_branch="main", as_user="maintainer")
    pr = forge.open_pr_as("me/t", "cand", "main", "candidate", "body", "maintainer")
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    forge.fetch("me/t", paths.kernel, base)
    paths.home.mkdir()
    write_wins(forge, "me/t", paths, base, [pr.number], [])
    assert "+a = 10" in (paths.home / "wins" / f"{pr.number}.patch").read_text()
    assert not drivers.exists(), "kernel git ran a driver named by the candidate's attributes"


def test_kernel_start_of_a_research_line_runs_no_driver_the_line_names(
        drivers: Path, target: tuple[Path, str, str], tmp_path: Path) -> None:
    """The agent's line (its ``cand`` branch here, pushed as ``agents/agent-01``) names
    the ``evil`` drivers in its attributes; the kernel's start of a session on it (the
    base merged in, instruction files reset, the kernel's commit, the shortstat) runs
    none (``run/lines.py``)."""
    from outerloop.run import lines

    repo, _, cand = target
    forge = LocalForge(tmp_path / "forge", "outerloop")
    forge.import_repo(repo, "me/t", default_branch="main", as_user="maintainer")
    bare = forge.repo_dir("me/t")
    _git(repo, "push", "-q", str(bare), f"{cand}:refs/heads/agents/agent-01")
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    base = forge.fetch("me/t", paths.kernel, "main")
    start = lines.start_line(paths, forge, "me/t", base, "agents/agent-01", "r1")
    assert start.conflicts == [] and start.head == cand
    assert workspace.read_at(paths, start.sha, "solver.py") == "a = 10\nb = 2\nc = 30\n"
    assert "changed" in lines.shortstat(paths, base, start.sha)
    assert not drivers.exists(), "kernel git ran a driver named by the line's attributes"
