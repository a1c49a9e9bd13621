"""A run's workspace, made by the tick (``prepare_workspace``): complete or made again."""

from __future__ import annotations

import shutil
from pathlib import Path

from outerloop.forge import localgit as g
from outerloop.kernel.actions import PrepareWorkspace
from outerloop.run.paths import RunPaths, branch_name
from outerloop.run.workspace import READY_FILE, prepare_workspace
from tests.support import TARGET, forge, make_home

RUN = "tour-20261130T000000-agent-01"


def _action(base: str) -> PrepareWorkspace:
    return PrepareWorkspace(target=TARGET, run=RUN, base=base,
                            branch=branch_name("agent-01", RUN))


def test_half_made_workspace_is_made_again_when_the_tick_died_while_cloning(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    local = forge(settings)
    base = local.branch_head(TARGET, "main")
    assert base is not None
    paths = RunPaths.of(settings.home, RUN)
    prepare_workspace(settings, local, _action(base))
    assert (paths.root / READY_FILE).exists()
    # A tick killed as soon as ``ws/.git`` appeared: cloned, nothing checked out yet.
    shutil.rmtree(paths.ws)
    (paths.root / READY_FILE).unlink()
    g.git(["clone", "--quiet", "--no-checkout", "--", str(paths.kernel), str(paths.ws)])
    assert not (paths.ws / "evaluate.py").exists()

    result = prepare_workspace(settings, local, _action(base))

    assert result.base == base
    assert (paths.ws / "evaluate.py").exists() and (paths.ws / "solver" / "tour.py").exists()
    branch = g.git_text(["rev-parse", "--abbrev-ref", "HEAD"], cwd=paths.ws)
    assert branch == branch_name("agent-01", RUN)
    assert g.git_text(["remote"], cwd=paths.ws) == ""
    assert (paths.root / READY_FILE).exists()


def test_complete_workspace_is_kept_when_the_intent_is_retried(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    local = forge(settings)
    base = local.branch_head(TARGET, "main")
    assert base is not None
    paths = RunPaths.of(settings.home, RUN)
    prepare_workspace(settings, local, _action(base))
    (paths.ws / "solver" / "note.txt").write_text("the agent's work")
    prepare_workspace(settings, local, _action(base))
    assert (paths.ws / "solver" / "note.txt").read_text() == "the agent's work"
