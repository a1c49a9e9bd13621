"""The operator's effective settings (file + ``OUTERLOOP_*`` overrides) reach the
kernel code running inside jobs, through the settings snapshot: real ticks, local
compute, the scripted agent. The override is in the environment only while the
settings are loaded (as a tick process loads them at its start), never while a job
starts, so a job can have it from the snapshot alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from outerloop.config import load_settings
from tests.support import AGENTS, ended, make_home, open_issue, tick_until


def test_job_plays_the_script_the_environment_named_when_it_overrides_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_home(tmp_path, "tinytsp-outside-scope.yaml")
    open_issue(settings, "Tours", "Please try something on tour.")
    with monkeypatch.context() as loading:
        loading.setenv("OUTERLOOP_HARNESS_SCRIPT", str(AGENTS / "tinytsp-noop.yaml"))
        effective = load_settings(settings.home)
    assert "OUTERLOOP_HARNESS_SCRIPT" not in os.environ
    state = tick_until(effective, ended, timeout_s=180)
    (run,) = state.runs.values()
    # tinytsp-noop submits (a verdict); tinytsp-outside-scope would be refused first.
    assert [v.verdict for v in run.verdicts] == ["no-improvement"]
    snapshots = list((settings.home / "cache" / "settings").glob("*.json"))
    assert snapshots and any("tinytsp-noop.yaml" in p.read_text() for p in snapshots)
