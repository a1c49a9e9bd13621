"""The operator's effective settings (file + ``OUTERLOOP_*`` overrides) reach the
kernel code running inside jobs, through the settings snapshot: real ticks as real
processes, local compute, the scripted agent."""

from __future__ import annotations

from pathlib import Path

from tests.support import AGENTS, ended, make_home, open_issue, tick_until


def test_job_plays_the_script_the_environment_named_when_it_overrides_the_file(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, "tinytsp-outside-scope.yaml")
    open_issue(settings, "Tours", "Please try something on tour.")
    override = {"OUTERLOOP_HARNESS_SCRIPT": str(AGENTS / "tinytsp-noop.yaml")}
    state = tick_until(settings, ended, timeout_s=180, subprocess_ticks=True, env=override)
    (run,) = state.runs.values()
    # tinytsp-noop submits (a verdict); tinytsp-outside-scope would be refused first.
    assert [v.verdict for v in run.verdicts] == ["no-improvement"]
    snapshots = list((settings.home / "cache" / "settings").glob("*.json"))
    assert snapshots and any("tinytsp-noop.yaml" in p.read_text() for p in snapshots)
