"""With ``ledger_remote``, a ledger behind its remote (a home restored from a backup)
takes the lost lines back before the tick acts, and one that diverged from it makes the
tick refuse in one line (issue 48 point 2; ``ledger/catchup.py``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from outerloop.kernel.tick import run_tick
from outerloop.ledger.book import tick_file
from tests.integration.test_ledger_repair import _git, _home_with_remote
from tests.support import TARGET, open_issue, state_of

ASKS = "Could this be faster?"


def _swap_ledger(home: Path, backup: Path) -> None:
    """The ledger and the fold cache put back as a backup held them (new inodes)."""
    for name in ("ledger", "cache"):
        shutil.rmtree(home / name)
        shutil.copytree(backup / name, home / name, symlinks=True)


def test_a_ledger_behind_its_remote_is_fast_forwarded_before_the_tick_acts(
        tmp_path: Path) -> None:
    settings, remote = _home_with_remote(tmp_path)
    open_issue(settings, "Speed", ASKS)
    run_tick(settings)
    backup = tmp_path / "backup"
    for name in ("ledger", "cache"):
        shutil.copytree(settings.home / name, backup / name, symlinks=True)
    open_issue(settings, "Speed again", ASKS)
    run_tick(settings)
    full = tick_file(settings.home, TARGET).read_bytes()
    waits = dict(state_of(settings).waiting)
    _swap_ledger(settings.home, backup)
    assert len(tick_file(settings.home, TARGET).read_bytes()) < len(full)

    report = run_tick(settings)
    assert any("fast-forwarded" in note for note in report.notes), report.notes
    assert report.ledger_damage == [] and not report.failures
    assert tick_file(settings.home, TARGET).read_bytes().startswith(full)
    assert dict(state_of(settings).waiting) == waits
    ledger = settings.home / "ledger"
    assert _git(ledger, "rev-parse", "HEAD") == _git(remote, "rev-parse", "main")
    assert _git(ledger, "status", "--porcelain") == ""


def test_a_ledger_diverged_from_its_remote_refuses_the_tick_in_one_line(
        tmp_path: Path) -> None:
    settings, remote = _home_with_remote(tmp_path)
    open_issue(settings, "Speed", ASKS)
    run_tick(settings)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    (other / "stranger.jsonl").write_text("{}\n")  # lines this home does not have
    _git(other, "add", "-A")
    for repo, said in ((other, "the remote's"), (settings.home / "ledger", "this home's")):
        _git(repo, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q",
             "--allow-empty", "-m", said)
    _git(other, "push", "-q", "origin", "HEAD:main")
    before = tick_file(settings.home, TARGET).read_bytes()
    open_issue(settings, "Speed again", ASKS)

    done = subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home",
                           str(settings.home)], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert "diverged" in line and "fix:" in line and "Traceback" not in done.stderr, line
    assert tick_file(settings.home, TARGET).read_bytes() == before  # nothing was done
