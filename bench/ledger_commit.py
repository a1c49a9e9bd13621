"""Ledger commit benchmark: what one tick's commit costs as history grows.

Builds a home with ``--runs`` ended runs (``bench/quiet_tick.py``'s history, committed),
runs one real ``outerloop tick`` (it folds and attests every file's head, and commits),
then ``--commits`` times: appends ``--lines`` events to the target's tick ledger (as a
tick does), attests the heads the fold computes, and times ``gitrepo.commit`` alone.
Prints per size: the commit's wall time (best and worst) and how much ``.git`` grew per
commit, against the size of the lines appended. Target (issue 27): at 100,000 runs a
commit <= 50 ms, and ``.git`` growing by about the size of the new lines. Nothing here
asserts.

    python bench/ledger_commit.py [--runs 0,10000,100000] [--commits 5] [--lines 5] [--keep DIR]

Run with ``--keep DIR`` on older code, then again on newer code with the same ``DIR``:
the second run commits on the homes the first built (an old single-file ledger
becoming its first segment).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import quiet_tick  # noqa: E402  (the history builder)


def _git_bytes(git_dir: Path) -> int:
    total = 0
    for root, _, names in os.walk(git_dir):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def _cpu() -> float:
    """CPU seconds (user + sys) of this process and the children it waited for (the
    gits a commit runs): on a shared machine less load-bound than the wall time."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _ledger_bytes(ledger: Path) -> int:
    total = 0
    for root, folders, names in os.walk(ledger):
        folders[:] = [f for f in folders if f != ".git"]  # a detached `git gc --auto` there
        total += sum(os.lstat(os.path.join(root, n)).st_size for n in names
                     if n.endswith(".jsonl"))
    return total


def split_history(home: Path) -> int:
    """Cut the history's one tick file into segments as the segmented writer would have
    written them (each ``SEGMENT_BYTES`` long, ``seq`` from 1 in each, the chain running
    on across them); returns the segment count."""
    from outerloop.ledger import chain, segments, store

    base = store.tick_file(home, quiet_tick.TARGET)
    source = base.with_name("history.tmp")
    base.rename(source)
    number, size, seq, link = 1, 0, 0, chain.GENESIS
    out = base.open("wb")
    with source.open("rb") as lines:
        for raw in lines:
            if size >= segments.SEGMENT_BYTES:
                out.close()
                number, size, seq = number + 1, 0, 0
                out = base.with_name(segments.name(store.TICK_FILE, number)).open("wb")
            value = json.loads(raw)
            value.pop("prev", None)
            seq += 1
            value["seq"] = seq
            line = chain.with_prev(json.dumps(value, separators=(",", ":")).encode(), link)
            out.write(line + b"\n")
            size += len(line) + 1
            link = chain.line_hash(line)
    out.close()
    source.unlink()
    return number


def one_size(runs: int, commits: int, lines: int, keep: Path | None,
             segmented: bool = False) -> None:
    from outerloop.forge.local import LocalForge
    from outerloop.home import init_home

    root = keep or Path(tempfile.mkdtemp(prefix="outerloop-bench-commit-"))
    home = root / "home"
    t0 = time.monotonic()
    if (home / "ledger").is_dir():  # a home --keep kept: built already (by older code too)
        _commits(home, runs, commits, lines, time.monotonic() - t0)
        return
    settings = init_home(home, forge="local", compute="local", harness="scripted",
                         targets=[quiet_tick.TARGET],
                         script=str(REPO / "examples/agents/tinytsp-2opt.yaml"))
    LocalForge(home / "forge", settings.forge.login).import_repo(REPO / "examples/tinytsp",
                                                                 quiet_tick.TARGET)
    quiet_tick.write_history(home, runs)
    if segmented:
        print(f"history cut into {split_history(home)} segments", flush=True)
    quiet_tick.commit_history(home)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home", str(home)],
                   env=env, check=True, capture_output=True)
    _commits(home, runs, commits, lines, time.monotonic() - t0)
    if keep is None:
        shutil.rmtree(root, ignore_errors=True)


def _commits(home: Path, runs: int, commits: int, lines: int, built: float) -> None:
    from outerloop.ledger import attest, gitrepo, store
    from outerloop.ledger import events as ev
    from outerloop.ledger import rebuild as ledger_state

    ledger = home / store.LEDGER_DIR
    git_dir = ledger / ".git"
    walls: list[float] = []
    cpus: list[float] = []
    grown: list[int] = []
    appended: list[int] = []
    for n in range(commits):
        state = ledger_state.rebuild(home)
        writer = store.LedgerWriter(store.tick_file(home, quiet_tick.TARGET),
                                    store.LogicalClock(state.clock))
        before_lines = _ledger_bytes(ledger)
        for k in range(lines):
            writer.append(ev.Note(level="info", text=f"bench commit {n} line {k}"))
        state = ledger_state.rebuild(home)
        attest.attest(home, dict(state.heads))
        appended.append(_ledger_bytes(ledger) - before_lines)
        before = _git_bytes(git_dir)
        cpu0 = _cpu()
        start = time.monotonic()
        done = gitrepo.commit(home, lines, stale_lock_s=60)
        walls.append(time.monotonic() - start)
        cpus.append(_cpu() - cpu0)
        if done.sha is None:
            raise SystemExit(f"commit failed: {done.notes}")
        grown.append(_git_bytes(git_dir) - before)
    files = sum(1 for _ in ledger.rglob("*.jsonl"))
    live = max((p.stat().st_size for p in (ledger / quiet_tick.TARGET_DIR).glob("*.jsonl")),
               default=0)
    tick = store.tick_files(home, quiet_tick.TARGET)
    live_tick = tick[-1].stat().st_size if tick else 0
    print(f"runs {runs:>7,}: commit {min(walls) * 1000:7.1f} ms best / "
          f"{max(walls) * 1000:7.1f} ms worst of {commits} ({min(cpus) * 1000:.0f} ms CPU "
          f"best, git's included); .git grows "
          f"{sum(grown) / len(grown) / 1024:8.1f} KiB per commit for "
          f"{sum(appended) / len(appended) / 1024:.1f} KiB of new lines (ledger+heads); "
          f"{files} ledger files, largest target-level file {live / 1e6:.1f} MB, live tick "
          f"segment {live_tick / 1e6:.2f} MB ({len(tick)} segments); "
          f"home built in {built:.0f}s  [target at 100,000: <= 50 ms, growth ~ new lines]",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="0,10000,100000",
                        help="comma-separated history sizes (ended runs)")
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--lines", type=int, default=5, help="events appended per commit")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build the homes under this directory (<dir>/<runs>/home) and "
                             "keep them; a home already there is reused, not built")
    parser.add_argument("--segmented", action="store_true",
                        help="write the history as segments (as today's writer does), "
                             "not as one old single-file ledger")
    args = parser.parse_args()
    for runs in (int(x) for x in args.runs.split(",")):
        keep = None if args.keep is None else args.keep / str(runs)
        one_size(runs, args.commits, args.lines, keep, args.segmented)


if __name__ == "__main__":
    main()
