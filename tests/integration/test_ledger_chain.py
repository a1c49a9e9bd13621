"""A committed ledger line edited, deleted, moved or cut off is named by ``outerloop
verify`` (file, line, what) and refused by the next tick, which restores the file from
the ledger's git history; the ledger then verifies again.

Before: the tick noticed only a file that shrank, was replaced, or changed in its last
4 KB; a line edited further back was folded and committed as it stood."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.ledger import chain
from outerloop.ledger.book import run_file, tick_file
from tests.integration.test_ledger_integrity import _committed, _ended_run, _tick
from tests.support import make_home, open_issue

pytestmark = pytest.mark.e2e


def _verify(settings: Settings, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "verify", "--home",
                           str(settings.home), *flags], capture_output=True, text=True,
                          timeout=120, check=False)


def _rewrite(path: Path, lines: list[bytes]) -> None:
    """Written over in place (same inode), as an editor saving in place would."""
    with path.open("r+b") as handle:
        handle.truncate(0)
        handle.write(b"".join(x + b"\n" for x in lines))


def _refused_and_restored(settings: Settings, key: str, said: str) -> None:
    """``verify`` names ``said``; the next tick that commits restores ``key`` (a settled
    run's file, which the fold no longer reads, is checked before each commit);
    ``verify`` passes."""
    before = _verify(settings)
    assert before.returncode == 1, before.stdout
    assert said in before.stdout, before.stdout
    open_issue(settings, "Faster please", "Make it all faster.")  # something to commit
    done = _tick(settings)
    assert f"LEDGER DAMAGED ledger/{key}: " in done.stderr, done.stderr
    assert "restored from the ledger's git history" in done.stderr, done.stderr
    after = _verify(settings)
    assert after.returncode == 0, after.stdout
    assert chain.walk((settings.home / "ledger" / key).read_bytes())[1] == []


def test_each_committed_line_changed_is_named_by_verify_and_restored_by_the_tick(
        tmp_path: Path) -> None:
    settings, run_id, _ = _ended_run(tmp_path)
    passed = _verify(settings, "--json")
    report = json.loads(passed.stdout)
    assert passed.returncode == 0 and report["ok"] and report["attested"] >= 2
    assert report["lines"] == report["chained"] > 10
    target = "demo__tinytsp"
    runs_key, tick_key = f"{target}/runs/{run_id}.jsonl", f"{target}/tick.jsonl"
    run_path, tick_path = run_file(settings.home, "demo/tinytsp", run_id), \
        tick_file(settings.home, "demo/tinytsp")

    lines = run_path.read_bytes().splitlines()  # a line edited (same length)
    lines[2] = lines[2].replace(b'"at":"2', b'"at":"3')
    _rewrite(run_path, lines)
    _refused_and_restored(settings, runs_key, f"ledger/{runs_key}:3: edited: line 3 changed")

    lines = tick_path.read_bytes().splitlines()  # a line deleted
    _rewrite(tick_path, [*lines[:4], *lines[5:]])
    _refused_and_restored(settings, tick_key, f"ledger/{tick_key}:5: deleted: seq 5 is "
                                              f"missing before line 5")

    lines = run_path.read_bytes().splitlines()  # two lines swapped
    _rewrite(run_path, [*lines[:3], lines[4], lines[3], *lines[5:]])
    _refused_and_restored(settings, runs_key, f"ledger/{runs_key}:4: reordered")

    lines = tick_path.read_bytes().splitlines()  # the file cut short
    _rewrite(tick_path, lines[: len(lines) // 2])
    _refused_and_restored(settings, tick_key, f"ledger/{tick_key}:{len(lines) // 2 + 1}: "
                                              f"truncated")


@pytest.mark.parametrize("cold", [False, True])
def test_an_edit_git_committed_too_is_restored_from_the_version_before_it(
        tmp_path: Path, cold: bool) -> None:
    """A line of the tick file edited and the edit committed (by hand, or by a tick
    before this check): the newest committed version does not chain, so the one before
    it is restored. ``cold``: no fold cache, so nothing but the chain tells the good
    version from the bad."""
    settings, _, _ = _ended_run(tmp_path)
    key = "demo__tinytsp/tick.jsonl"
    path = settings.home / "ledger" / key
    good = path.read_bytes()
    lines = good.splitlines()
    lines[1] = lines[1].replace(b'"at":"2', b'"at":"4')
    _rewrite(path, lines)
    ledger = settings.home / "ledger"
    subprocess.run(["git", "commit", "-qam", "an edit"], cwd=ledger, check=True)
    assert _committed(settings, key) != good
    if cold:
        (settings.home / "cache" / "history.sqlite3").unlink()
    _refused_and_restored(settings, key, f"ledger/{key}:2: edited")
    assert path.read_bytes().startswith(good)


def test_a_forged_attestation_appended_to_the_heads_is_restored_away_by_the_tick(
        tmp_path: Path) -> None:
    """Whoever can write the ledger can chain a line onto ``heads.jsonl``, but cannot
    sign it: the next tick that commits takes the file back to its committed bytes."""
    settings = make_home(tmp_path)
    open_issue(settings, "Faster please", "Make it all faster.")
    assert _tick(settings).returncode == 0
    key = "demo__tinytsp/heads.jsonl"
    heads = settings.home / "ledger" / key
    good = heads.read_bytes()
    body = b'{"at":"2026-01-01T00:00:00.000000Z","files":{"tick.jsonl":[1,"00"]}}'
    forged = chain.with_prev(body, chain.line_hash(good.splitlines()[-1]))
    heads.write_bytes(good + forged[:-1] + b',"mac":"' + b"0" * 64 + b'"}\n')
    _refused_and_restored(settings, key, f"ledger/{key}:2: heads: its MAC does not match")
    assert heads.read_bytes().startswith(good)
