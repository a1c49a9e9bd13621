"""Edges of a run: failed starts and the claim cap, secrets kept from the agent, and a
submission without a code change."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support import (
    AGENTS,
    TARGET,
    ended,
    forge,
    in_review,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e

SENTINEL_TOKEN = "ghp_SENTINELforgeTOKEN0123456789"
SENTINEL_KEY = "sk-ant-SENTINELmodelKEY0123456789"


def test_third_failed_start_stops_claiming_when_runs_cannot_start(tmp_path: Path) -> None:
    """A target that ships ``.outerloop/`` leaves no room for the agent's channel: every
    run of it fails to start, the target's fault (a missing agent script, the
    deployment's, waits instead: tests/e2e/test_deployment_waits.py)."""
    import shutil

    from tests.support import EXAMPLE_TARGET

    target = tmp_path / "ships-channel"
    shutil.copytree(EXAMPLE_TARGET, target)
    (target / ".outerloop").mkdir()
    (target / ".outerloop" / "notes.txt").write_text("the target's own\n")
    settings = make_home(tmp_path, target_dir=target)
    number = open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, lambda s: len(s.runs) == 3 and ended(s), timeout_s=180)
    for _ in range(4):
        tick_until(settings, lambda s: True)
    state = state_of(settings)
    assert len(state.runs) == 3
    assert {r.ending for r in state.runs.values()} == {"aborted"}
    claims = [c for c in forge(settings).list_comments(TARGET, number)
              if "outerloop:claim" in c.body]
    assert len(claims) == 3


def _env_script(tmp_path: Path) -> Path:
    """The 2-opt agent, with each leg first saving the session's environment."""
    text = (AGENTS / "tinytsp-2opt.yaml").read_text()
    head, legs = text.split("legs:\n", 1)
    dump = '  - - shell: "env > .outerloop/env-leg-$(ls .outerloop | wc -l).txt"\n    -'
    legs = legs.replace("  - - ", dump + " ", )
    path = tmp_path / "env-agent.yaml"
    path.write_text(head + "legs:\n" + legs)
    return path


def test_agent_never_sees_seed_token_or_key_when_a_run_goes_through_the_gate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", SENTINEL_TOKEN)
    monkeypatch.setenv("OUTERLOOP_FORGE_TOKEN", SENTINEL_TOKEN)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL_KEY)
    settings = make_home(tmp_path, _env_script(tmp_path))
    token_file = settings.home / "keys" / "forge-token"
    token_file.write_text(SENTINEL_TOKEN)
    token_file.chmod(0o600)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    seeds = run.seeds[1]
    assert len(seeds) == 3  # the first look's pairs
    run_dir = settings.home / "runs" / run.run_id
    dumps = sorted((run_dir / "ws" / ".outerloop").glob("env-leg-*.txt"))
    assert len(dumps) >= 2
    seen_by_agent = [p.read_text() for p in dumps]
    seen_by_agent += [p.read_text() for p in (run_dir / "legs").glob("*-prompt.md")]
    seen_by_agent += [p.read_text(errors="replace") for p in (run_dir / "home").rglob("*")
                      if p.is_file()]
    for text in seen_by_agent:
        assert SENTINEL_TOKEN not in text and SENTINEL_KEY not in text
        assert not [seed for seed in seeds if str(seed) in text]
    env = dict(line.split("=", 1) for line in dumps[0].read_text().splitlines() if "=" in line)
    assert env["HOME"] == str(run_dir / "home")
    assert not [k for k in env if k.startswith("OUTERLOOP_") or k.endswith("_TOKEN")]
    launch_logs = [p.read_text() for p in (run_dir / "jobs").rglob("std*")]
    assert not any(SENTINEL_TOKEN in t or SENTINEL_KEY in t for t in launch_logs)


def test_submission_without_code_change_is_refused_when_tree_equals_base(
        tmp_path: Path) -> None:
    script = tmp_path / "no-change.yaml"
    script.write_text(
        "legs:\n"
        "  - - write: {path: .outerloop/report.md, content: \"nothing changed\"}\n"
        "    - syscall: \"submit --report .outerloop/report.md\"\n"
        "    - syscall: sleep\n"
        "  - - expect: \"no code change\"\n"
        "    - syscall: \"stop --report .outerloop/report.md\"\n")
    settings = make_home(tmp_path, script)
    open_issue(settings, "Nothing", "Submit tour as it is.")
    state = tick_until(settings, ended)
    (run,) = state.runs.values()
    assert run.ending == "negative-result"
    assert run.verdicts == [] and run.submissions == 0
    assert forge(settings).list_prs(TARGET, "all") == []


def test_issue_without_standing_is_claimed_only_when_a_writer_approves_it(
        tmp_path: Path) -> None:
    from outerloop.kernel.tick import run_tick

    settings = make_home(tmp_path)
    local = forge(settings)
    self_approved = open_issue(settings, "Shorter tours", "Try local search on tour.",
                               as_user="stranger")
    local.label_as(TARGET, self_approved, "outerloop:approved", "stranger")
    run_tick(settings)
    run_tick(settings)
    assert state_of(settings).runs == {}
    assert local.list_comments(TARGET, self_approved) == []
    approved = open_issue(settings, "Shorter tours too", "Local search on tour, please.",
                          as_user="stranger")
    local.label_as(TARGET, approved, "outerloop:approved", "maintainer")
    run_tick(settings)
    (run,) = state_of(settings).runs.values()
    assert run.issue == approved


def test_failed_baseline_eval_is_run_again_once_when_it_fails(tmp_path: Path) -> None:
    import threading

    from tests.support import eval_sides, in_process_target

    target = tmp_path / "target"
    in_process_target(target)
    # Evals run sandboxed with nothing writable outside their job: the base fails while
    # the test's flag is in a declared read-only dir; the test takes it away once the
    # first base side has failed (the command waits before it looks, so the retry,
    # submitted by the next wake, never sees it).
    shared = tmp_path / "shared"
    shared.mkdir()
    flag = shared / "fail-the-baseline"
    flag.touch()
    contract = target / ".outerloop.yaml"
    contract.write_text(contract.read_text().replace(
        "command: python evaluate.py --bench tour --json",
        f"command: grep -q two_opt solver/tour.py || {{ sleep 3; ! test -e {flag}; }} "
        f"|| exit 3; python evaluate.py --bench tour --json", 1))
    settings = make_home(tmp_path, target_dir=target,
                         extra_toml=f'[sandbox]\nread_only = ["{shared}"]\n')
    runs = settings.home / "runs"

    def unflag_after_the_first_failure() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and flag.exists():
            if any(p.read_text().strip() == "3" for p in runs.glob("*/jobs/*/[01]/exit_code")):
                flag.unlink()
            time.sleep(0.05)

    watcher = threading.Thread(target=unflag_after_the_first_failure, daemon=True)
    watcher.start()
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert not flag.exists()
    names = [j.name for j in state.jobs.values() if j.purpose == "eval"]
    assert [n for n in names if n.endswith("-r1")] == [names[0] + "-r1"]
    failed = [side for side in eval_sides(settings, state, run.run_id)
              if (side.dir / "exit_code").read_text().strip() == "3"]
    assert [(side.job, side.role) for side in failed] == [(names[0], "base")]
    assert run.verdicts[-1].verdict == "improved" and run.submissions == 1


def test_ending_names_the_refused_submission_when_the_agent_then_stops_handing_over(
        tmp_path: Path) -> None:
    """The kernel refused "no code change", then the agent's sessions ended without a
    request: the ending's reason says both, from the kernel's own facts, in `status`
    (text and --json), the board and the report posted on the issue."""
    import json
    import subprocess
    import sys

    script = tmp_path / "no-change-then-silent.yaml"
    script.write_text(
        "legs:\n"
        "  - - write: {path: .outerloop/report.md, content: \"nothing changed\"}\n"
        "    - syscall: \"submit --report .outerloop/report.md\"\n"
        "    - syscall: sleep\n"
        "  - - expect: \"no code change\"\n"
        "    - shell: \"true\"\n")
    settings = make_home(tmp_path, script)
    number = open_issue(settings, "Nothing", "Submit tour as it is.")
    state = tick_until(settings, lambda s: ended(s) and all(
        r.report_posted for r in s.runs.values()))
    (run,) = state.runs.values()
    assert run.ending == "negative-result"
    assert "without handing over" in run.end_reason
    assert "Refused: no code change" in run.end_reason, run.end_reason

    def status(*flags: str) -> str:
        done = subprocess.run([sys.executable, "-m", "outerloop", "status", "--home",
                               str(settings.home), *flags], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert f"reason: {run.end_reason}" in status()
    (shown,) = json.loads(status("--json"))["runs"]
    assert shown["reason"] == run.end_reason
    assert "Refused: no code change" in (settings.home / "board" / "CLIMB.md").read_text()
    (report,) = [c.body for c in forge(settings).list_comments(TARGET, number)
                 if c.body.startswith(f"# Run {run.run_id}")]
    assert f"kernel note: {run.end_reason}" in report
