"""A target whose week of GPU-hours is spent keeps a new issue waiting, unclaimed
(issue 25): intake asks the same question admission does, so it never claims an issue
admission would make wait. Through real ticks (local forge, local compute with one
stand-in GPU, a scripted agent whose launch holds that GPU for a few seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.config import Settings, load_settings
from outerloop.kernel.tick import run_tick
from tests.support import (
    EXAMPLE_TARGET,
    TARGET,
    ended,
    forge,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e

GPU_AGENT = """\
legs:
  - - syscall: 'launch --name hold --minutes 1 --gpus 1 --why "hold the GPU" -- sleep 3'
    - syscall: sleep
  - - syscall: stop
"""


def _gpu_target(tmp_path: Path) -> Path:
    target = tmp_path / "tinytsp"
    target.mkdir()
    for path in EXAMPLE_TARGET.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            copy = target / path.relative_to(EXAMPLE_TARGET)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
    contract = target / ".outerloop.yaml"
    text = contract.read_text().replace("gpu_hours_per_run: 0", "gpu_hours_per_run: 0.1")
    contract.write_text(text.replace("    eval_minutes: 5\n", "    eval_minutes: 5\n"
                                     "    gpus: 1\n", 1))
    return target


def _one_gpu(settings: Settings) -> Settings:
    config = settings.home / "outerloop.toml"
    head, tail = config.read_text().split("[compute]\n", 1)
    config.write_text(f"{head}[compute]\nlocal_gpus = 1\n{tail}")
    return load_settings(settings.home)


def _set_limits(settings: Settings, lines: str) -> Settings:
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace("grace_minutes = 0",
                                                 f"grace_minutes = 0\n{lines}"))
    return load_settings(settings.home)


def _kernel_posts(settings: Settings, number: int) -> list[str]:
    return [c.body for c in forge(settings).list_comments(TARGET, number)
            if c.author == settings.forge.login]


def test_a_spent_gpu_week_keeps_a_new_issue_unclaimed_and_says_why(tmp_path: Path) -> None:
    agent = tmp_path / "gpu.yaml"
    agent.write_text(GPU_AGENT)
    settings = _one_gpu(make_home(tmp_path, agent, target_dir=_gpu_target(tmp_path)))
    open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, ended, timeout_s=180)
    (first,) = state.runs.values()
    assert first.gpu_seconds >= 3
    # The operator lowers the week's GPU-hours below what the first run used.
    settings = _set_limits(settings, "gpu_hours_per_week = 0.0005")
    second = open_issue(settings, "Shorter tours again", "Try more on tour.")
    for _ in range(3):
        run_tick(settings)
    state = state_of(settings)
    assert len(state.runs) == 1, "the issue was claimed although no run could start"
    assert not [b for b in _kernel_posts(settings, second) if "outerloop:claim" in b]
    ((_, (reason, _)),) = state.waiting.items()
    assert "GPU-hours are spent" in reason
    posts = [b for b in _kernel_posts(settings, second) if "cannot start yet" in b]
    assert len(posts) == 1 and "GPU-hours are spent" in posts[0]
    data = json.loads(CliRunner().invoke(
        cli_main, ["status", "--json", "--home", str(settings.home)]).output)
    assert [w["issue"] for w in data["waiting"]] == [second]
    assert "GPU-hours are spent" in data["waiting"][0]["reason"]
