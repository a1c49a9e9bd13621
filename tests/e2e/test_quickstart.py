"""docs/quickstart.md section 2, followed step by step: every ``$ outerloop`` line of the
section runs as written, with only the placeholders (``~/src/project``, ``~/.outerloop``,
``~/my-agent.yaml``, ``NUMBER``) pointed at a temporary directory."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_reference_target import AGENT, reference_target
from tests.support import REPO_ROOT

pytestmark = pytest.mark.e2e

QUICKSTART = REPO_ROOT / "docs" / "quickstart.md"


def quickstart_commands() -> list[str]:
    """The ``$ outerloop ...`` lines of section 2, in order."""
    text = QUICKSTART.read_text()
    section = text.split("## 2.")[1].split("## 3.")[0]
    return [line.strip()[2:] for line in section.splitlines()
            if line.strip().startswith("$ outerloop ")]


def own_repository(tmp_path: Path) -> Path:
    """A repository written for the reference: metric/value output, no .gitignore for
    the agent's scratch files, a benchmark named ``tsp`` as in the quickstart."""
    project = reference_target(tmp_path)
    contract = project / ".outerloop.yaml"
    contract.write_text(contract.read_text().replace("name: tour", "name: tsp")
                        + "steward: {allowed: [tests/]}\n")
    return project


def test_quickstart_takes_an_own_repository_from_zero_to_a_pull_request(
        tmp_path: Path) -> None:
    project = own_repository(tmp_path)
    home = tmp_path / "outerloop-home"
    agent = tmp_path / "my-agent.yaml"
    shutil.copy(AGENT, agent)
    places = {"~/src/project": str(project), "~/.outerloop": str(home),
              "~/my-agent.yaml": str(agent)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTERLOOP_")}
    commands = quickstart_commands()
    assert [c.split()[1] for c in commands] == [
        "contract", "init", "forge", "doctor", "forge", "start", "forge", "forge"]
    loop: subprocess.Popen[str] | None = None
    pr_number = ""
    try:
        for line in commands:
            for placeholder, real in places.items():
                line = line.replace(placeholder, real)
            argv = [sys.executable, "-m", "outerloop", *shlex.split(line)[1:]]
            if "NUMBER" in argv:
                argv[argv.index("NUMBER")] = pr_number
            if argv[3:5] == ["start", "--mode"]:
                loop = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env)
                continue
            if argv[3:6] == ["forge", "pr", "list"]:
                pr_number = wait_for_pr(argv, env, loop)
            done = subprocess.run(argv, capture_output=True, text=True, env=env,
                                  timeout=300, check=False)
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            if argv[3:5] == ["contract", "check"]:
                assert "warning: steward: not supported by this version; ignored" in done.stdout
            if argv[3:6] == ["forge", "pr", "show"]:
                assert "## Measured" in done.stdout and "lower, better" in done.stdout
    finally:
        if loop is not None:
            loop.send_signal(signal.SIGINT)
            loop.communicate(timeout=60)


def wait_for_pr(argv: list[str], env: dict[str, str],
                loop: subprocess.Popen[str] | None, timeout_s: float = 150) -> str:
    """The number of the first pull request, once the local loop has opened it."""
    deadline = time.monotonic() + timeout_s
    while True:
        listed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60,
                                check=False)
        found = re.search(r"#(\d+)", listed.stdout)
        if found:
            return found.group(1)
        assert loop is None or loop.poll() is None, "the local loop stopped"
        assert time.monotonic() < deadline, "no pull request from the quickstart"
        time.sleep(1)
