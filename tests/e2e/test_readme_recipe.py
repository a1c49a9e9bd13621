"""The README's "Using it on your own target" recipe, followed as written on a target
that is not the demo's (examples/tinyclf), reaches a ready pull request with the
review panel ``outerloop init`` wrote (issue 23): every ``outerloop`` line of the
recipe's block runs as written, only the placeholders (``~/.outerloop``,
``me/myproject``, ``~/src/myproject``, ``my-agent.yaml``, the issue's words) pointed at
a temporary directory, and ``outerloop tick`` repeated until the pull request is open.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import AGENTS, REPO_ROOT, TINYCLF

pytestmark = pytest.mark.e2e

README = REPO_ROOT / "README.md"
REPO = "me/myproject"


def recipe_commands() -> list[str]:
    """The ``outerloop ...`` commands of the README's own-target block, in order
    (continuation lines joined, comments dropped)."""
    text = README.read_text()
    block = text.split("## Using it on your own target", 1)[1].split("```bash", 1)[1]
    block = block.split("```", 1)[0].replace("\\\n", " ")
    return [line.split("#", 1)[0].strip() for line in block.splitlines()
            if line.strip().startswith("outerloop ")]


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", *argv[1:]], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


def test_readme_recipe_reaches_a_ready_pull_request_with_the_judge_init_wrote(
        tmp_path: Path) -> None:
    project = tmp_path / "src" / "myproject"
    shutil.copytree(TINYCLF, project)
    agent = tmp_path / "my-agent.yaml"
    shutil.copy(AGENTS / "tinyclf-knn.yaml", agent)
    home = tmp_path / "outerloop-home"
    places = {"~/.outerloop": str(home), "~/src/myproject": str(project),
              "my-agent.yaml": str(agent)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTERLOOP_")}
    commands = recipe_commands()
    assert [c.split()[1] for c in commands][:4] == ["init", "forge", "contract", "forge"]
    assert "--harness scripted" in commands[0] and "--compute local" in commands[0]
    for line in commands:
        for placeholder, real in places.items():
            line = line.replace(placeholder, real)
        argv = shlex.split(line)
        if argv[1:4] == ["forge", "issue", "open"]:
            argv[argv.index("--title") + 1] = "Better accuracy"
            argv[argv.index("--body") + 1] = "On benchmark accuracy: try 5 nearest neighbours."
        done = _run(argv, env)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        if argv[1] == "tick":
            pr = _tick_until_a_pull_request(argv, env, home)
    listed = _run(["outerloop", "forge", "pr", "list", "--home", str(home)], env).stdout
    assert f"#{pr}" in listed and "[draft]" not in listed, listed
    shown = _run(["outerloop", "forge", "pr", "show", str(pr), "--home", str(home)], env).stdout
    assert "Review degraded" not in shown and "No model read this change" in shown, shown
    config = (home / "outerloop.toml").read_text()
    assert "[review]" in config and 'kind = "scripted"' in config


def _tick_until_a_pull_request(argv: list[str], env: dict[str, str], home: Path,
                               timeout_s: float = 240) -> int:
    from outerloop.forge.local import LocalForge

    forge = LocalForge(home / "forge", "outerloop")
    deadline = time.monotonic() + timeout_s
    while True:
        pulls = forge.list_prs(REPO, "all")
        if pulls:
            return pulls[0].number
        assert time.monotonic() < deadline, "no pull request from the README's recipe"
        time.sleep(0.5)
        _run(argv, env)
