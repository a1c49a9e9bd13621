"""Durability benchmark: what the power-loss fsyncs cost a tick and the demo.

"after" is the kernel as it is; "before" sets ``OUTERLOOP_BENCH_SKIP_DURABILITY=1``
(``outerloop/config.py``, read in one place), which skips what issue 22 added to every
commit: git's ``core.fsync`` in the ledger repository and the local forge's
``synchronous=FULL`` (``NORMAL`` instead). The fsync of each ledger line, there before,
is kept in both, and so is the other addition, the fsync of a new ledger file's
directory (``atomic.py`` sits below the settings): it happens once per new file (a
target's tick file, a run's file, its archive file), so its cost is timed on its own.

Figures printed (nothing asserted; fsync cost is the storage's, so the file system of
the temporary directory is printed too):

- a tick that records events: each sample opens ``--issues`` issues naming no
  benchmark, so the tick posts one explanation comment each (forge writes), appends
  its intents and dones (ledger lines) and commits the ledger (git); median and spread
  of ``--ticks`` samples per side, the two sides alternating so both see the same load;
- a quiet tick (nothing to record, nothing committed): should cost nothing more;
- ``outerloop demo`` wall time, ``--demos`` runs per side, alternating;
- one new ledger file, appended to with and without its directory's fsync.

    python bench/durability.py [--ticks 15] [--issues 3] [--demos 2] [--no-demo]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = "demo/tinytsp"
SKIP_ENV = "OUTERLOOP_BENCH_SKIP_DURABILITY"  # outerloop.config.BENCH_SKIP_DURABILITY_ENV
SIDES = ("before", "after")


def _set_side(side: str) -> None:
    if side == "before":
        os.environ[SKIP_ENV] = "1"
    else:
        os.environ.pop(SKIP_ENV, None)


def _file_system(path: Path) -> str:
    """The mount holding ``path`` and its type, from ``/proc/mounts``."""
    best, kind = "", "?"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    here = str(path.resolve())
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3 and (here == parts[1] or here.startswith(parts[1].rstrip("/") + "/")) \
                and len(parts[1]) > len(best):
            best, kind = parts[1], parts[2]
    return f"{kind} at {best}"


def _summary(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return (f"median {statistics.median(ms):7.1f} ms  (min {ms[0]:6.1f}, max {ms[-1]:6.1f}, "
            f"n={len(ms)})")


def bench_ticks(root: Path, ticks: int, issues: int) -> None:
    sys.path.insert(0, str(REPO))
    from outerloop.forge.local import LocalForge
    from outerloop.home import init_home
    from outerloop.kernel.tick import run_tick

    homes = {}
    for side in SIDES:
        _set_side(side)
        settings = init_home(root / side, forge="local", compute="local",
                             harness="scripted", targets=[TARGET],
                             script=str(REPO / "examples/agents/tinytsp-2opt.yaml"))
        forge = LocalForge(settings.home / "forge", settings.forge.login)
        forge.import_repo(REPO / "examples/tinytsp", TARGET)
        run_tick(settings)  # the first tick's one-off work (the target's first look)
        homes[side] = (settings, forge)
    busy: dict[str, list[float]] = {side: [] for side in SIDES}
    quiet: dict[str, list[float]] = {side: [] for side in SIDES}
    events: dict[str, list[int]] = {side: [] for side in SIDES}
    for sample in range(ticks):
        for side in SIDES if sample % 2 == 0 else SIDES[::-1]:
            _set_side(side)
            settings, forge = homes[side]
            for n in range(issues):
                forge.open_issue_as(TARGET, f"Faster please {sample}.{n}",
                                    "Make it all faster.", "maintainer")
            start = time.perf_counter()
            report = run_tick(settings)
            busy[side].append(time.perf_counter() - start)
            events[side].append(report.events)
            if report.commit is None or report.failures:
                raise SystemExit(f"{side}: the tick did not commit: {report.notes} "
                                 f"{report.failures}")
            start = time.perf_counter()
            report = run_tick(settings)
            quiet[side].append(time.perf_counter() - start)
    flushes = {}
    for side in SIDES:  # one more busy tick each, counting git's flushes (trace2)
        _set_side(side)
        settings, forge = homes[side]
        for n in range(issues):
            forge.open_issue_as(TARGET, f"Counted {n}", "Make it all faster.", "maintainer")
        trace = root / f"trace2-{side}.json"
        os.environ["GIT_TRACE2_EVENT"] = str(trace)
        try:
            run_tick(settings)
        finally:
            os.environ.pop("GIT_TRACE2_EVENT", None)
        flushes[side] = sum(int(e["value"]) for e in map(json.loads, trace.read_text()
                                                             .splitlines())
                            if e.get("key") == "fsync/hardware-flush") if trace.exists() else 0
    _set_side("after")
    print(f"tick recording events ({issues} issues answered, "
          f"{statistics.median(events['after']):.0f} events, one commit):")
    for side in SIDES:
        print(f"  {side:6}  {_summary(busy[side])}")
    extra = statistics.median(busy["after"]) - statistics.median(busy["before"])
    print(f"  cost    {extra * 1000:+.1f} ms a tick "
          f"({extra / statistics.median(busy['before']) * 100:+.0f}%)")
    print(f"  git fsyncs in one such tick: before {flushes['before']}, "
          f"after {flushes['after']} (GIT_TRACE2_EVENT fsync/hardware-flush)")
    fastest = min(busy["after"]) - min(busy["before"])
    print(f"  cost at the fastest tick (least load) {fastest * 1000:+.1f} ms")
    print("quiet tick (nothing recorded, nothing committed):")
    for side in SIDES:
        print(f"  {side:6}  {_summary(quiet[side])}")


def bench_demo(root: Path, demos: int) -> None:
    walls: dict[str, list[float]] = {side: [] for side in SIDES}
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    for sample in range(demos):
        for side in SIDES if sample % 2 == 0 else SIDES[::-1]:
            side_env = dict(env)
            side_env.pop(SKIP_ENV, None)
            if side == "before":
                side_env[SKIP_ENV] = "1"
            home = root / f"demo-{side}-{sample}"
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "outerloop", "demo", "--home",
                                   str(home)], env=side_env, capture_output=True, text=True,
                                  check=False)
            walls[side].append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"demo ({side}) failed: {done.stderr[-2000:]}")
    print("outerloop demo (wall time, to an open pull request):")
    for side in SIDES:
        print(f"  {side:6}  " + ", ".join(f"{w:.1f} s" for w in walls[side])
              + f"  (median {statistics.median(walls[side]):.1f} s)")


def bench_forge_writes(root: Path, samples: int) -> None:
    """One local-forge comment (one SQLite write transaction) at NORMAL and at FULL."""
    from outerloop.forge.local import LocalForge

    times: dict[str, list[float]] = {side: [] for side in SIDES}
    forges = {}
    for side in SIDES:
        _set_side(side)
        forges[side] = LocalForge(root / f"forge-{side}", "outerloop")
        forges[side].import_repo(REPO / "examples/tinytsp", TARGET)
    number = {side: forges[side].open_issue_as(TARGET, "t", "b", "maintainer").number
              for side in SIDES}
    for sample in range(samples):
        for side in SIDES if sample % 2 == 0 else SIDES[::-1]:
            _set_side(side)
            start = time.perf_counter()
            forges[side].post_comment(TARGET, number[side], f"comment {sample}")
            times[side].append(time.perf_counter() - start)
    _set_side("after")
    print("one local-forge comment (SQLite write; before NORMAL, after FULL):")
    for side in SIDES:
        print(f"  {side:6}  {_summary(times[side])}")


def bench_new_file(root: Path, samples: int) -> None:
    """The append that creates a ledger file (its line's fsync, then its directory's),
    and the directory's fsync alone: what that append costs more than before."""
    sys.path.insert(0, str(REPO))
    from outerloop.atomic import fsync_dir
    from outerloop.ledger import events as ev
    from outerloop.ledger.book import LedgerWriter

    where = root / "new-files"
    where.mkdir()
    first: list[float] = []
    dir_only: list[float] = []
    for n in range(samples):
        start = time.perf_counter()
        LedgerWriter(where / f"f{n}.jsonl").append(ev.Note(level="info", text="x"))
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        fsync_dir(where)
        dir_only.append(time.perf_counter() - start)
    print("a new ledger file (its first append; once per target, run or archive file):")
    print(f"  first append (line + directory fsync)  {_summary(first)}")
    print(f"  of which the directory's fsync (new)   {_summary(dir_only)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=15, help="samples per side")
    parser.add_argument("--issues", type=int, default=3, help="issues answered per tick")
    parser.add_argument("--demos", type=int, default=2, help="demo runs per side")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="outerloop-durability-") as tmp:
        root = Path(tmp)
        print(f"storage: {_file_system(root)}; before = {SKIP_ENV}=1, after = as shipped")
        bench_ticks(root, args.ticks, args.issues)
        bench_forge_writes(root, args.ticks * 2)
        bench_new_file(root, args.ticks)
        if not args.no_demo:
            bench_demo(root, args.demos)


if __name__ == "__main__":
    main()
