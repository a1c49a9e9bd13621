"""A run job finds its run's target (``attempt/context._target_of``) before its run has a
file of its own: a run of the second target, queued in the tick's cache, is that
target's, though the cache holds every target's runs."""

from __future__ import annotations

from pathlib import Path

from outerloop.attempt.context import _target_of
from outerloop.config import load_settings
from outerloop.home import init_home
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, rebuild, run_file, tick_file

FIRST, SECOND = "demo/tinytsp", "demo/tinytsp-fork"


def test_a_new_run_of_the_second_target_is_found_on_that_target(tmp_path: Path) -> None:
    """Seen as a race under fork starts (tests/harness/test_fleet_runs.py): the climb job
    of the second target's run started before its tick saved the cache again, took the
    first target (whose fold on top of the cache held the run), read that target's tick
    file and missed its own workspace: "has no workspace yet", the run aborted."""
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted",
              targets=[FIRST, SECOND])
    settings = load_settings(home)
    run = "tour-20261207T172009-agent-01-2"
    LedgerWriter(tick_file(home, SECOND)).append(ev.RunQueued(
        run=run, target=SECOND, benchmark="tour", agent="agent-01", issue=1,
        hypothesis="h"))
    assert run in rebuild(home).runs  # the tick's cache holds it
    assert not run_file(home, SECOND, run).exists()
    assert _target_of(settings, run) == SECOND
