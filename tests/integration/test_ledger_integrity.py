"""Committed ledger lines never vanish silently: a ledger file replaced, truncated or
gone is named loudly by the next tick, restored from the ledger's git history, and
nothing is done twice; a target whose file cannot be restored is frozen.

Before: a replaced ``tick.jsonl`` made the tick drop its cache and fold the file as
it was; the kernel forgot every run of the target and claimed the same issue again,
saying only "malformed ledger lines skipped: 1"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.forge.markers import parse_markers
from outerloop.kernel.tick import run_tick
from outerloop.ledger.book import run_file, tick_file
from tests.support import TARGET, ended, forge, make_home, open_issue, state_of, tick_until

pytestmark = pytest.mark.e2e

KEY = "demo__tinytsp/tick.jsonl"


def jobs_use_this_checkout(settings: Settings) -> Settings:
    """Jobs get ``PYTHONPATH`` when the tests have one (a checkout tested beside an
    installed outerloop): the attempt job then runs the code under test."""
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        '[compute]\nkind = "local"\n', '[compute]\nkind = "local"\npass_env = ["PYTHONPATH"]\n',
        1))
    return load_settings(settings.home)


def _ended_run(tmp_path: Path) -> tuple[Settings, str, int]:
    """A home whose one run (on issue 1, still open) has ended; the ledger committed."""
    settings = jobs_use_this_checkout(make_home(tmp_path, "tinytsp-outside-scope.yaml"))
    issue = open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, ended, timeout_s=180)
    run_tick(settings)  # the report posted, everything committed
    (run,) = state.runs.values()
    assert forge(settings).get_issue(TARGET, issue).state == "open"
    return settings, run.run_id, issue


def _claims(settings: Settings, issue: int) -> int:
    return sum(1 for c in forge(settings).list_comments(TARGET, issue)
               for m in parse_markers(c.body) if m.kind == "claim")


def _tick(settings: Settings) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home",
                           str(settings.home)], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def _committed(settings: Settings, key: str) -> bytes:
    return subprocess.run(["git", "show", f"HEAD:{key}"], cwd=settings.home / "ledger",
                          capture_output=True, check=True).stdout


def test_a_replaced_tick_file_is_restored_and_no_issue_is_claimed_twice(
        tmp_path: Path) -> None:
    settings, run_id, issue = _ended_run(tmp_path)
    path = tick_file(settings.home, TARGET)
    before = path.read_bytes()
    assert _claims(settings, issue) == 1
    path.unlink()  # what a write through `<sid>.json.tmp` -> tick.jsonl then a rename left
    path.write_text('{"session": "scripted", "step": 3}\n')

    done = _tick(settings)
    assert f"LEDGER DAMAGED ledger/{KEY}: the file" in done.stderr  # shrank, or replaced
    assert "restored from the ledger's git history" in done.stderr
    assert path.read_bytes().startswith(before)
    for _ in range(3):
        run_tick(settings)
    state = state_of(settings)
    assert list(state.runs) == [run_id] and state.runs[run_id].ended
    assert _claims(settings, issue) == 1
    beat = json.loads((settings.home / "heartbeat.json").read_text())
    assert beat["ledger_damage"] == []  # healed: later ticks say nothing
    kept = list((settings.home / "ledger-damaged").rglob("tick.jsonl"))
    assert kept and b'"step": 3' in kept[0].read_bytes()


def test_a_truncated_run_file_is_restored_when_a_cold_fold_meets_it(tmp_path: Path) -> None:
    settings, run_id, issue = _ended_run(tmp_path)
    path = run_file(settings.home, TARGET, run_id)
    committed = _committed(settings, f"demo__tinytsp/runs/{run_id}.jsonl")
    with path.open("r+b") as handle:
        handle.truncate(len(committed) // 3)
    shutil.rmtree(settings.home / "cache")  # a cold fold: an upgrade, a lost cache

    done = _tick(settings)
    assert f"LEDGER DAMAGED ledger/demo__tinytsp/runs/{run_id}.jsonl" in done.stderr
    assert path.read_bytes() == committed
    run_tick(settings)
    state = state_of(settings)
    assert list(state.runs) == [run_id] and state.runs[run_id].ended
    assert _claims(settings, issue) == 1


def test_a_target_is_frozen_while_its_file_cannot_be_restored(tmp_path: Path) -> None:
    settings, _run_id, issue = _ended_run(tmp_path)
    path = tick_file(settings.home, TARGET)
    before = path.read_bytes()
    git = settings.home / "ledger" / ".git"
    git.rename(settings.home / "ledger-git-away")  # no history to restore from
    with path.open("r+b") as handle:
        handle.truncate(100)
    second = open_issue(settings, "Faster tours", "Try 2-opt on tour.")

    for _ in range(2):  # loud on every tick, nothing acted on
        done = _tick(settings)
        assert f"LEDGER DAMAGED ledger/{KEY}: the file shrank" in done.stderr
        assert "NOT restored" in done.stderr and "frozen" in done.stderr
    status = subprocess.run([sys.executable, "-m", "outerloop", "status", "--json", "--home",
                             str(settings.home)], capture_output=True, text=True, check=True)
    assert json.loads(status.stdout)["frozen_targets"] == ["demo__tinytsp"]
    assert len(path.read_bytes()) == 100
    assert _claims(settings, issue) == 1 and _claims(settings, second) == 0
    assert "LEDGER DAMAGED" in (settings.home / "board" / "index.html").read_text()

    (settings.home / "ledger-git-away").rename(git)  # the operator brings the history back
    done = _tick(settings)
    assert "restored from the ledger's git history" in done.stderr
    assert path.read_bytes().startswith(before)
    state = tick_until(settings, lambda s: len(s.runs) == 2, timeout_s=60)
    assert {r.issue for r in state.runs.values()} == {issue, second}
    assert _claims(settings, issue) == 1


def test_a_frozen_file_is_never_committed_so_git_keeps_the_good_bytes(tmp_path: Path) -> None:
    """The fold read the file, it was damaged before any commit held it: nothing can
    restore it, and the tick's commit leaves it out (else git's history would hold only
    the damage)."""
    from outerloop.kernel.tick import run_tick as tick
    from outerloop.ledger import events as ev
    from outerloop.ledger.book import LedgerWriter, rebuild

    settings = make_home(tmp_path)
    path = tick_file(settings.home, TARGET)
    writer = LedgerWriter(path)
    for n in range(5):
        writer.append(ev.Note(level="info", text=f"note {n}"))
    rebuild(settings.home)  # folded, never committed
    path.write_bytes(path.read_bytes()[:50])
    report = tick(settings)
    assert any("NOT restored" in line for line in report.ledger_damage)
    listed = subprocess.run(["git", "ls-files"], cwd=settings.home / "ledger",
                            capture_output=True, text=True, check=True).stdout
    assert KEY not in listed
