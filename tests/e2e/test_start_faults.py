"""A run's start when the machine, not the agent, fails: the forge's git refuses to
serve clones for a while. The run waits and retries; its issue keeps its one claim."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.ledger.state import State
from tests.e2e.test_github_research_run import _as, github_home
from tests.github.fake import FakeGitHub
from tests.github.fixtures import KERNEL, MAINTAINER
from tests.support import TARGET, forge, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

OUTAGE_S = 25.0

FAILING_GIT = """#!/bin/sh
# git, except that clones and fetches from the forge fail while {flag} exists (a 502)
if [ -e '{flag}' ]; then
  served=0; talks=0
  for arg in "$@"; do
    case "$arg" in clone|fetch) talks=1 ;; '{forge}'*) served=1 ;; esac
  done
  if [ "$talks$served" = 11 ]; then
    echo "fatal: unable to access '{forge}': The requested URL returned error: 502" >&2
    exit 128
  fi
fi
exec '{git}' "$@"
"""


def _failing_git(tmp_path: Path, flag: Path, forge_dir: Path) -> Path:
    """A directory holding a ``git`` that fails the forge's clones while ``flag`` exists."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(FAILING_GIT.format(flag=flag, forge=forge_dir, git=real))
    wrapper.chmod(0o755)
    return bin_dir


def _started_or_lost(settings: Settings, said: list[str]) -> Callable[[State], bool]:
    """Tick until a leg started or three runs ended (the issue lost); keep what status
    said of the waiting run after each tick."""
    def done(state: State) -> bool:
        beat = json.loads((settings.home / "heartbeat.json").read_text())
        said.extend(beat.get("waiting", {}).values())
        return any(r.legs >= 1 for r in state.runs.values()) \
            or sum(1 for r in state.runs.values() if r.ended) >= 3
    return done


def _ticks_through_the_outage(settings: Settings, clears: threading.Timer,
                              said: list[str]) -> State:
    """Tick until a leg started or the issue was lost, while ``clears`` ends the
    outage after ``OUTAGE_S``."""
    clears.start()
    try:
        return tick_until(settings, _started_or_lost(settings, said), timeout_s=120,
                          pause_s=1.0)
    finally:
        clears.cancel()


def _assert_one_claim_no_release(bodies: list[str]) -> list[str]:
    """The issue's kernel comments: one claim, no release; its delay comments."""
    assert [b for b in bodies if "outerloop:release" in b] == []
    assert len([b for b in bodies if "outerloop:claim" in b]) == 1
    return [b for b in bodies if "key=start-delayed-" in b]


def test_run_starts_on_its_one_claim_when_the_forge_fails_clones_for_25_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_home(tmp_path)
    flag = tmp_path / "forge-502"
    flag.touch()
    bin_dir = _failing_git(tmp_path, flag, settings.home / "forge")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    number = open_issue(settings, "Shorter tours", "Try local search on tour.")
    clears = threading.Timer(OUTAGE_S, lambda: flag.unlink(missing_ok=True))
    said: list[str] = []
    state = _ticks_through_the_outage(settings, clears, said)
    assert [r.ending for r in state.runs.values()] == [None]
    (run,) = state.runs.values()
    assert not flag.exists(), "the run started while the forge still failed its clones"
    assert not run.ended and run.legs >= 1 and run.claim_no == 1
    assert run.start_failures >= 2  # it did fail, and retried
    comments = [c.body for c in forge(settings).list_comments(TARGET, number)]
    delayed = _assert_one_claim_no_release(comments)
    assert len(delayed) == 1, comments
    assert str(settings.home) not in delayed[0]  # the operator's paths stay in status
    assert any("start failed" in why and "502" in why for why in said), said


@pytest.mark.github
def test_run_starts_on_its_one_claim_when_github_answers_git_fetches_502_for_25_s(
        tmp_path: Path, fake_github: FakeGitHub) -> None:
    fake = fake_github
    settings = github_home(tmp_path, fake)
    fake.fail("GET", r"\.git/info/refs$", 502, times=10_000)
    fake.fail("POST", r"\.git/git-upload-pack$", 502, times=10_000)
    number = _as(fake, MAINTAINER).create_issue(
        title="Shorter tours", body="Please try local search on tour.").number

    def clear() -> None:
        with fake.lock:
            fake.faults.clear()

    clears = threading.Timer(OUTAGE_S, clear)
    said: list[str] = []
    state = _ticks_through_the_outage(settings, clears, said)
    assert [r.ending for r in state.runs.values()] == [None]
    (run,) = state.runs.values()
    assert not fake.faults, "the run started while GitHub still failed its git fetches"
    assert run.legs >= 1 and run.claim_no == 1
    assert run.start_failures >= 2
    mine = [c["body"] for c in fake.comments_on(TARGET, number) if c["author"] == KERNEL]
    assert len(_assert_one_claim_no_release(mine)) == 1
    assert any("start failed" in why for why in said), said
