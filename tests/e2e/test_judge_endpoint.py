"""The judges' own endpoint: a judge the model API refuses makes the review wait for
its endpoint (no degraded PR) while ``[review] wait_hours`` allows, then degrades."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from tests.e2e.test_review import judge_script
from tests.harness.models import AnthropicModel
from tests.support import TARGET, forge, open_issue, state_of, tick_until

pytestmark = pytest.mark.e2e

REFUSING = "    - end: {stop_reason: refused, detail: \"429 rate limited\"}\n"


def _home(tmp_path: Path, url: str, wait_hours: float) -> Settings:
    from tests.support import make_home

    settings = make_home(tmp_path, judge=judge_script(tmp_path, REFUSING))
    config = settings.home / "outerloop.toml"
    text = config.read_text().replace("[review]\n", f"[review]\nendpoint = \"judges\"\n"
                                      f"wait_hours = {wait_hours}\n", 1)
    config.write_text(text + f"\n[endpoints.judges]\nprobe = \"{url}/health\"\n")
    return load_settings(settings.home)


def _review_waits(settings: Settings) -> bool:
    state = state_of(settings)
    return any((w := state.endpoint_wait(r)) is not None and w.review
               for r in state.runs.values())


def test_refused_judge_makes_the_review_wait_for_its_endpoint_instead_of_degrading(
        tmp_path: Path) -> None:
    with AnthropicModel([]) as judges:
        settings = _home(tmp_path, judges.url, 24)
        open_issue(settings, "Shorter tours", "Try local search on tour.")
        state = tick_until(settings, lambda s: _review_waits(settings), timeout_s=180)
    latch = state.endpoints["judges"]
    assert latch.down and latch.source == "judge" and latch.detail == "429 rate limited"
    assert forge(settings).list_prs(TARGET, "all") == [], "no degraded PR while it waits"
    (run,) = state.runs.values()
    assert not run.ended and run.pr_number is None


def test_review_degrades_once_it_waited_its_bound(tmp_path: Path) -> None:
    with AnthropicModel([]) as judges:
        settings = _home(tmp_path, judges.url, 0.0005)  # under two seconds
        open_issue(settings, "Shorter tours", "Try local search on tour.")
        tick_until(settings, lambda s: any(r.pr_number for r in s.runs.values()),
                   timeout_s=240)
    (pr,) = forge(settings).list_prs(TARGET, "all")
    assert pr.draft and "**Review degraded**: judge-1 produced no verdict" in pr.body
