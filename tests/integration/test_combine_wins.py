"""A combination run's wins as patches (``run/wins.py``), with real git and the local
forge: each pull request's change from where it left the base, in the agent's home,
without the target's eval-only paths, and applying cleanly to the base."""

from __future__ import annotations

import subprocess
from pathlib import Path

from outerloop.forge.local import LocalForge
from outerloop.run.paths import WINS_DIR, RunPaths
from outerloop.run.wins import write_wins

REPO = "o/n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_a_win_becomes_a_patch_without_eval_only_paths_that_applies_to_the_base(
        tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "solver").mkdir(parents=True)
    (source / "hidden").mkdir()
    (source / "solver" / "x.py").write_text("X = 1\n")
    (source / "hidden" / "answers.txt").write_text("the real answers\n")
    forge = LocalForge(tmp_path / "forge", "outerloop")
    forge.import_repo(source, REPO)
    base = forge.branch_head(REPO, forge.default_branch(REPO))
    assert base is not None
    work = tmp_path / "work"
    forge.fetch(REPO, work, base)
    (work / "solver" / "x.py").write_text("X = 2\n")
    (work / "hidden" / "answers.txt").write_text("what the candidate saw: CHANGED\n")
    _git(work, "commit", "-qam", "a win")
    head = _git(work, "rev-parse", "HEAD")
    forge.push(REPO, work, head, "outerloop/agent-01/r1")
    pr = forge.open_pr(REPO, "outerloop/agent-01/r1", forge.default_branch(REPO), "t", "b")

    paths = RunPaths.of(tmp_path / "home", "r2")
    forge.fetch(REPO, paths.kernel, base)
    paths.home.mkdir(parents=True)
    assert write_wins(forge, REPO, paths, base, [pr.number], ["hidden/"]) == \
        [f"{pr.number}.patch"]
    patch = (paths.home / WINS_DIR / f"{pr.number}.patch").read_text()
    assert "solver/x.py" in patch and "+X = 2" in patch
    assert "hidden" not in patch and "CHANGED" not in patch and "real answers" not in patch
    check = tmp_path / "check"
    forge.fetch(REPO, check, base)
    _git(check, "apply", "--check", str(paths.home / WINS_DIR / f"{pr.number}.patch"))
