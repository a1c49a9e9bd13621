"""Busy-tick benchmark: a tick that folds one new event over a history of real-shape runs.

`bench/quiet_tick.py`'s history is synthetic (about 9.5 KB of ledger a run). This one
replays a real run: it runs `outerloop demo` once into a temporary home, merges its PR
and ticks until the run has ended, then copies that run's ledger lines (tick.jsonl and
its run file, research-log records included) once per history run, with fresh run ids,
job ids, record keys, logical clocks, times (one run a minute, ending now) and hash
chains. The old runs' research-log records keep their real shape but carry no files
(``"files": {}``): a 100,000-run history with the boards they once copied would not fit
on this disk; what a record costs *now* is measured from the ticks below, which write
real ones.

The history is that of a home that has been ticking: housekeeping's lines come in
where its tick would have written them. A run's workspace is cleaned a day after its
ending (``clean:<run>`` intent and done), its jobs pruned ``retention_days`` after it
(``prune:<run>``; no archive configured). A run that falls due within ``DUE_MARGIN`` of
now is done early, at now: the ticks timed below come later than the history's now, and
a quiet tick must find nothing newly due (it plans nothing).

Then, on a home whose fold cache a first tick has built (as the kernel would):

- a quiet tick (nothing new), best of ``TIMED``, after one untimed tick that folds
  the lines of the home's last change (a busy tick's own, with ``--reuse``);
- a busy tick: one new ``leader`` event appended (a merge moved the best), so the tick
  folds it, renders the board and publishes a research-log record; best of ``TIMED``;
- the tick after a busy one: it folds that tick's own lines (its record's intent and
  done), finds the boards as they were rendered, and commits;
- beside them, a fixed workload (``quiet_tick.machine_reference``): on a shared VM the
  same tick varies by half between minutes, and this says which minute it was;
- the ledger bytes that busy tick wrote, and the ledger bytes of one real run
  (template run plus the records its ticks wrote in the demo).

A tick that opens a PR is not timed: it needs a live run whose agent submitted in a
real workspace (branch pushed to the forge, judges passed), which a history written
straight into the ledger does not have; its fold and views are the busy tick's, its
forge call `bench/forge_calls.py`'s. Nothing here asserts; targets are printed.

Then ``status --json`` and the board (best of ``TIMED``), and a cold rebuild: the
fold's cache removed, one tick (``FOLD_CACHES``).

    python bench/busy_tick.py [--runs 10000 --runs 100000 --runs 1000000] [--keep DIR [--reuse]]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from quiet_tick import (  # noqa: E402
    CPU,
    commit_history,
    machine_reference,
    tick_env,
    timed_child,
)

TARGET = "demo/tinytsp"
TARGET_DIR = "demo__tinytsp"
PER_TARGET = {"gpu_budget", "leader"}
"""Template lines that are about the target, not the run: kept from the first run only."""
QUIET_S, BUSY_S, PEAK_MB, COMMIT_MS, PER_RUN_KB = 0.15, 0.3, 100, 30, 10
COLD_S, COLD_MB, VIEW_S = 120, 500, 1.0
"""Issue 52's targets at any history up to 1,000,000 runs, printed beside each figure."""
DUE_MARGIN = timedelta(hours=2)
"""Housekeeping due this soon after the history's now is written as done (at now): the
bench's own ticks (up to ~15 min after it at 100,000 runs) then find nothing due."""


def demo_template(root: Path, env: dict[str, str], reuse: bool = False) -> tuple[Path, int]:
    """A real run's ledger: `outerloop demo`, merge its PR, tick until it has ended and
    its record is published. Returns the demo's ledger dir and its ledger bytes.
    ``reuse``: the one an earlier ``--keep`` made."""
    home = root / "demo"
    ledger = home / "ledger" / TARGET_DIR
    if reuse:
        return ledger, sum(p.stat().st_size for p in ledger.rglob("*.jsonl")
                           if p.name != "heads.jsonl")
    py = [sys.executable, "-m", "outerloop"]
    subprocess.run([*py, "demo", "--home", str(home)], env=env, check=True,
                   capture_output=True)
    pr = json.loads("[" + ",".join(
        line for line in (home / "ledger" / TARGET_DIR / "tick.jsonl").read_text().splitlines()
        if '"kind":"done"' in line and '"key":"pr:' in line) + "]")[0]["result"]["number"]
    subprocess.run([*py, "forge", "pr", "merge", str(pr), "--home", str(home)], env=env,
                   check=True, capture_output=True)
    for _ in range(2):
        subprocess.run([*py, "tick", "--home", str(home)], env=env, check=True,
                       capture_output=True)
    size = sum(p.stat().st_size for p in ledger.rglob("*.jsonl") if p.name != "heads.jsonl")
    return ledger, size


_AT = re.compile(r'"at":"([0-9T:.\-]+)Z"')
_LC = re.compile(r'"lc":\d+')
_SEQ = re.compile(r'"seq":\d+')
_PREV = re.compile(r',"prev":"[0-9a-f]+"\}$')
_RECORD_KEY = re.compile(r'record:demo/tinytsp:[0-9a-f]{16}')
_DIGEST = re.compile(r'"digest":"[0-9a-f]{16}"')
"""A record intent's digest: its key (``record:<target>:<digest>``, which its intent no
longer writes) is made of it, so it is renamed as the done's key is."""


def _strip_files(line: str) -> str:
    if '"kind":"publish_record"' not in line:
        return line
    event = json.loads(line)
    event["action"]["files"] = {}
    return json.dumps(event, separators=(",", ":"))


class Template:
    """One real run's lines, split where the history interleaves them: the tick's lines
    before the run ends, the run's own file, the tick's lines after."""

    def __init__(self, ledger: Path) -> None:
        run_file = next((ledger / "runs").glob("*.jsonl"))
        self.run_id = run_file.stem
        tick = [_PREV.sub("}", line) for line in (ledger / "tick.jsonl").read_text().splitlines()]
        self.run_lines = [_PREV.sub("}", line) for line in run_file.read_text().splitlines()]
        ended = next(i for i, line in enumerate(tick) if '"kind":"run_ended"' in line)
        self.before = [_strip_files(x) for x in tick[:ended]]
        self.after = [_strip_files(x) for x in tick[ended:]]
        self.jobs = sorted(set(re.findall(r'"(1\d{7})"', "\n".join(tick + self.run_lines))))
        self.t0 = min(datetime.fromisoformat(m + "+00:00")
                      for m in _AT.findall("\n".join(tick + self.run_lines)))
        self.ended = datetime.fromisoformat(_AT.findall(tick[ended])[0] + "+00:00") - self.t0
        """The run's ending, after its first line."""
        self.last = max(datetime.fromisoformat(m + "+00:00")
                        for m in _AT.findall("\n".join(tick))) - self.t0
        """The tick's last line about it, after its first line."""


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Housekeeping:
    """The clean and prune lines a ticking home's housekeeping wrote for the history's
    runs (``kernel/lanes/housekeeping.py``), each as its tick writes them: an intent,
    then its done (``freed_bytes`` 0: the history's runs have no files on disk)."""

    def __init__(self, now: datetime) -> None:
        from outerloop.config import ArchiveSettings
        from outerloop.kernel.lanes.housekeeping import CLEAN_AFTER_S

        self.now = now
        self.until = now + DUE_MARGIN
        self.after = [("clean", timedelta(seconds=CLEAN_AFTER_S)),
                      ("prune", timedelta(days=ArchiveSettings().retention_days))]
        self._queues: dict[str, list[tuple[datetime, str]]] = {what: [] for what, _ in self.after}
        """Per kind, (due, run) in due order: the runs end in order."""
        self.written = {what: 0 for what, _ in self.after}
        self.last_at = datetime.min.replace(tzinfo=UTC)

    def ended(self, run: str, at: datetime) -> None:
        for what, after in self.after:
            if at + after <= self.until:
                self._queues[what].append((at + after, run))

    def lines(self, by: datetime) -> list[str]:
        """The lines of every clean and prune due by ``by``, in due order."""
        import msgspec

        from outerloop import effects as eff
        from outerloop.ledger import events as ev

        encoder = msgspec.json.Encoder(enc_hook=str)
        due = []
        for what, queue in self._queues.items():
            taken = 0
            while taken < len(queue) and queue[taken][0] <= by:
                due.append((queue[taken][0], what, queue[taken][1]))
                taken += 1
            del queue[:taken]
        out = []
        for when, what, run in sorted(due):
            self.written[what] += 1
            at = _stamp(max(self.last_at, min(when, self.now)))
            action: eff.CleanWorkspace | eff.PruneJobs = (
                eff.CleanWorkspace(target=TARGET, run=run) if what == "clean"
                else eff.PruneJobs(target=TARGET, run=run))
            # as the executor writes them (no key or run on the intent, none on the
            # done); seq and lc 1, not their default, so the line has them to renumber
            for event in (ev.Intent(at=at, seq=1, lc=1, action=action),
                          ev.Done(at=at, seq=1, lc=1, key=action.key,
                                  result=ev.EffectResult(freed_bytes=0))):
                out.append(encoder.encode(event).decode())
        return out


def write_history(home: Path, runs: int, tpl: Template) -> tuple[int, dict[str, int]]:
    """Append ``runs`` copies of the template run; returns the event count and how many
    runs were cleaned and pruned."""
    from outerloop.ledger import chain

    ledger = home / "ledger" / TARGET_DIR
    (ledger / "runs").mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    clock = [0]
    tick_seq = [0]
    tick_link = [chain.GENESIS]
    events = 0
    job_re = re.compile("|".join(tpl.jobs)) if tpl.jobs else None
    housekeeping = Housekeeping(now)

    def stamped(lines: list[str]) -> list[str]:
        """Lines written at their own time: the next clock and seq only."""
        out = []
        for line in lines:
            clock[0] += 1
            tick_seq[0] += 1
            line = _LC.sub(f'"lc":{clock[0]}', line, count=1)
            out.append(_SEQ.sub(f'"seq":{tick_seq[0]}', line, count=1))
        return out

    def chained(lines: list[str], link: list[str]) -> str:
        text = []
        for line in lines:
            raw = chain.with_prev(line.encode(), link[0])
            link[0] = chain.line_hash(raw)
            text.append(raw.decode() + "\n")
        return "".join(text)

    with (ledger / "tick.jsonl").open("w") as tick:
        for n in range(runs):
            run = f"tour-{n:06d}-agent-01"
            shift = now - timedelta(minutes=runs - n) - tpl.t0
            jobs = {old: str(20_000_000 + n * len(tpl.jobs) + i)
                    for i, old in enumerate(tpl.jobs)}

            def fresh(line: str, n: int = n, run: str = run, shift: timedelta = shift,
                      jobs: dict[str, str] = jobs) -> str:
                line = line.replace(tpl.run_id, run)
                if job_re is not None:
                    line = job_re.sub(lambda m: jobs[m.group(0)], line)
                line = _RECORD_KEY.sub(lambda m: f"record:{TARGET}:{n:08x}{m.group(0)[-8:]}",
                                       line)
                line = _DIGEST.sub(lambda m: f'"digest":"{n:08x}{m.group(0)[-9:-1]}"', line)
                line = _AT.sub(lambda m: '"at":"' + (datetime.fromisoformat(
                    m.group(1) + "+00:00") + shift).strftime("%Y-%m-%dT%H:%M:%S.%f") + 'Z"',
                    line)
                clock[0] += 1
                return _LC.sub(f'"lc":{clock[0]}', line, count=1)

            def tick_lines(lines: list[str], n: int = n) -> list[str]:
                out = []
                for line in lines:
                    if n and any(f'"kind":"{k}"' in line[:30] for k in PER_TARGET):
                        continue
                    tick_seq[0] += 1
                    out.append(_SEQ.sub(f'"seq":{tick_seq[0]}', fresh(line), count=1))
                return out

            kept = stamped(housekeeping.lines(by=tpl.t0 + shift))
            first = tick_lines(tpl.before)
            own = [fresh(line) for line in tpl.run_lines]
            last = tick_lines(tpl.after)
            housekeeping.ended(run, tpl.t0 + shift + tpl.ended)
            housekeeping.last_at = tpl.t0 + shift + tpl.last
            tick.write(chained(kept + first, tick_link))
            (ledger / "runs" / f"{run}.jsonl").write_text(chained(own, [chain.GENESIS]))
            tick.write(chained(last, tick_link))
            events += len(kept) + len(first) + len(own) + len(last)
        kept = stamped(housekeeping.lines(by=housekeeping.until))
        tick.write(chained(kept, tick_link))
        events += len(kept)
    return events, housekeeping.written


def ledger_bytes(home: Path) -> int:
    """The ledger's JSONL bytes; its ``.git`` is not walked (a ``gc --auto`` a tick
    started in the background may be removing object dirs meanwhile)."""
    total = 0
    for top, dirs, files in os.walk(home / "ledger"):
        dirs[:] = [d for d in dirs if d != ".git"]
        total += sum(os.stat(os.path.join(top, f)).st_size for f in files
                     if f.endswith(".jsonl"))
    return total


def append_leader(home: Path, value: float) -> None:
    """One new event, as the tick's writer appends it: a merge moved the best. Into the
    live segment of the tick's file (``ledger/segments.py``): after the first tick the
    history's ``tick.jsonl`` is a full segment 1, and a line added to it would break
    the chain into segment 2."""
    from outerloop.ledger import events as ev
    from outerloop.ledger import segments, store

    base = store.tick_file(home, TARGET)
    live = segments.live(base)
    with live.open("rb") as f:
        f.seek(max(0, live.stat().st_size - 20000))
        last = json.loads(f.read().splitlines()[-1])
    writer = store.LedgerWriter(base, store.LogicalClock(int(last["lc"]) + 1_000))
    writer.append(ev.Leader(run=last.get("run"), target=TARGET, benchmark="tour",
                            value=f"{value:.4f}", baseline="7.7300"))


HISTORY_NOW = "bench-history-now"
"""In a kept home: the history's now (a stamp), for ``--reuse``."""
TIMED = 5
"""Ticks of each kind timed: the best is the figure (a shared machine's noise is added
time, never taken away), the worst shows the spread."""
REUSE_SLACK = timedelta(minutes=20)
"""``--reuse`` ticks no later than the history's now plus ``DUE_MARGIN`` less this."""


def reuse_clock(home: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with the tick's clock held within ``DUE_MARGIN`` of the kept history's
    now: later, runs fall due (one a minute, as the history ended them) and a tick is
    not quiet. Set back only when needed, by the tick's own test hook
    (``OUTERLOOP_CLOCK_OFFSET_S``), printed."""
    from outerloop.clock import parse_stamp

    latest = parse_stamp((home / HISTORY_NOW).read_text().strip()) + DUE_MARGIN - REUSE_SLACK
    offset = min(0, int((latest - datetime.now(UTC)).total_seconds()))
    print(f"[reuse {home}] the tick's clock: {'real' if offset == 0 else f'{offset} s off'}"
          f" (no later than the history's now + {DUE_MARGIN - REUSE_SLACK})")
    return {**env, "OUTERLOOP_CLOCK_OFFSET_S": str(offset)} if offset else env


def measure(runs: int, tpl: Template, demo_bytes: int, demo_records: int, root: Path,
            env: dict[str, str], reuse: bool = False) -> None:
    """Build a history of ``runs`` template runs and time its ticks; ``demo_records``: the
    bytes of the demo's own research-log records (with their boards). ``reuse``: time the
    kept home of an earlier ``--keep`` instead (built, committed, cache made)."""
    home = root / f"home-{runs}"
    if reuse:
        env = reuse_clock(home, env)
    else:
        build(runs, tpl, home, env)
    time_ticks(runs, home, env, demo_bytes, demo_records)


def build(runs: int, tpl: Template, home: Path, env: dict[str, str]) -> None:
    """The history, committed, and the two first ticks (the cache, the heads) timed."""
    from outerloop.clock import stamp
    from outerloop.forge.local import LocalForge
    from outerloop.home import init_home

    settings = init_home(home, forge="local", compute="local", harness="scripted",
                         targets=[TARGET],
                         script=str(REPO / "examples/agents/tinytsp-2opt.yaml"))
    LocalForge(home / "forge", settings.forge.login).import_repo(REPO / "examples/tinytsp",
                                                                 TARGET)
    t0 = time.monotonic()
    events, kept = write_history(home, runs, tpl)
    (home / HISTORY_NOW).write_text(stamp(datetime.now(UTC)) + "\n")
    size = ledger_bytes(home)
    print(f"[{runs} runs] history: {events} events ({events / max(runs, 1):.0f} per run), "
          f"{size / 1e6:.0f} MB ({size / max(runs, 1) / 1e3:.1f} KB per run, old records "
          f"without files; {kept['clean']} runs cleaned, {kept['prune']} pruned), written "
          f"in {time.monotonic() - t0:.0f}s")
    t0 = time.monotonic()
    commit_history(home)
    tick = [sys.executable, "-m", "outerloop", "tick", "--home", str(home)]
    wall, rss, _ = timed_child(tick, env)
    wall2, rss2, _ = timed_child(tick, env)
    print(f"[{runs} runs] committed in {time.monotonic() - t0 - wall - wall2:.0f}s; first tick "
          f"(cache, heads) {wall:.1f}s {rss:.0f} MB; second {wall2:.2f}s {rss2:.0f} MB")


def time_ticks(runs: int, home: Path, env: dict[str, str], demo_bytes: int,
               demo_records: int) -> None:
    """Quiet ticks, then busy ones (one new event each), best and worst of ``TIMED``."""
    tick = [sys.executable, "-m", "outerloop", "tick", "--home", str(home)]
    print(f"[{runs} runs] before the quiet ticks: {machine_reference(env)}")
    # Untimed: the tick after the home's last change folds that change's own lines (a
    # busy tick's record and its done, when --reuse follows an earlier run's busy
    # ticks), so it is not quiet; it is timed below, after the busy ticks.
    timed_child(tick, env)
    del CPU[-1:]
    walls, peaks, planned = [], [], []
    for _ in range(TIMED):
        wall, rss, _ = timed_child(tick, env)
        walls.append(wall)
        peaks.append(rss)
        planned.append(json.loads((home / "heartbeat.json").read_text()).get("actions", 0))
    print(f"[{runs} runs] quiet tick: {min(walls):.2f}s best / {max(walls):.2f}s worst of "
          f"{TIMED} ({' '.join(f'{w:.2f}' for w in walls)}), {min(CPU[-TIMED:]):.2f}s CPU, "
          f"peak {max(peaks):.0f} MB, actions {planned}  "
          f"[target <= {QUIET_S} s, <= {PEAK_MB} MB, no action]")
    walls, peaks, wrote, commits, checks = [], [], [], [], []
    for i in range(TIMED):
        append_leader(home, 6.5 - i / 100 - random.random() / 1e4)
        before = ledger_bytes(home)
        wall, rss, _ = timed_child(tick, env)
        wrote.append(ledger_bytes(home) - before)
        walls.append(wall)
        peaks.append(rss)
        beat = json.loads((home / "heartbeat.json").read_text())
        commits.append(beat.get("commit_s") or 0.0)
        checks.append(beat.get("git_check_s") or 0.0)
    print(f"[{runs} runs] busy tick (folds one new event, publishes a record): "
          f"{min(walls):.2f}s best / {max(walls):.2f}s worst of {TIMED} "
          f"({' '.join(f'{w:.2f}' for w in walls)}), {min(CPU[-TIMED:]):.2f}s CPU, "
          f"peak {max(peaks):.0f} MB, wrote {max(wrote) / 1e3:.1f} KB of ledger  "
          f"[target <= {BUSY_S} s, <= {PEAK_MB} MB]")
    print(f"[{runs} runs] its ledger commit: {min(commits) * 1000:.0f} ms best / "
          f"{max(commits) * 1000:.0f} ms worst; the check against git before it (git diff "
          f"HEAD): {min(checks) * 1000:.0f} ms best / {max(checks) * 1000:.0f} ms worst  "
          f"[target: commit <= {COMMIT_MS} ms]")
    wall, rss, _ = timed_child(tick, env)
    beat = json.loads((home / "heartbeat.json").read_text())
    print(f"[{runs} runs] the tick after a busy one (folds that tick's own lines, finds "
          f"every board as rendered, commits): {wall:.2f}s, "
          f"{CPU[-1]:.2f}s CPU, peak {rss:.0f} MB, its own part {beat.get('last_tick_s')}s "
          f"[a tick that folds new events: target <= {BUSY_S} s]")
    print(f"[{runs} runs] after the busy ticks: {machine_reference(env)}")
    record = max(wrote)
    per_run = demo_bytes - demo_records + 3 * record
    print(f"[{runs} runs] ledger bytes per real run at this history: ~{per_run / 1e3:.1f} KB "
          f"(the demo run's {demo_bytes / 1e3:.1f} KB with its 3 records at this tick's "
          f"record size)  [target <= {PER_RUN_KB} KB]")
    time_views(runs, home, env)
    time_cold(runs, home, env)


def time_views(runs: int, home: Path, env: dict[str, str]) -> None:
    """What a person reads: ``status --json`` and the board rendered, best of ``TIMED``."""
    for name, argv in (("status --json", ["status", "--json"]), ("board", ["board"])):
        walls, peaks = [], []
        for _ in range(TIMED):
            wall, rss, _ = timed_child([sys.executable, "-m", "outerloop", *argv, "--home",
                                        str(home)], env)
            walls.append(wall)
            peaks.append(rss)
        print(f"[{runs} runs] {name}: {min(walls):.2f}s best / {max(walls):.2f}s worst of "
              f"{TIMED}, peak {max(peaks):.0f} MB  [target <= {VIEW_S} s]")


FOLD_CACHES = ("fold.pickle", "settled-*.pickle", "history.sqlite3*")
"""The fold's derived files under ``cache/`` (the pickled state and its settled parts
before issue 52, the history index after): a cold rebuild is a tick without them."""


def time_cold(runs: int, home: Path, env: dict[str, str]) -> None:
    """A cold rebuild: the fold's cache removed, one tick folds the whole ledger again
    (the heads stay attested, so this is the fold, not the first tick's attestation)."""
    for pattern in FOLD_CACHES:
        for path in (home / "cache").glob(pattern):
            path.unlink()
    tick = [sys.executable, "-m", "outerloop", "tick", "--home", str(home)]
    wall, rss, _ = timed_child(tick, env)
    print(f"[{runs} runs] cold rebuild (a tick with no fold cache): {wall:.1f}s, "
          f"{CPU[-1]:.1f}s CPU, peak {rss:.0f} MB  [target <= {COLD_S} s, <= {COLD_MB} MB]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, action="append", default=None)
    parser.add_argument("--keep", type=Path, default=None, help="build the homes here, keep them")
    parser.add_argument("--reuse", action="store_true",
                        help="time the homes an earlier --keep left in --keep's folder")
    args = parser.parse_args()
    if args.reuse and args.keep is None:
        parser.error("--reuse times the homes of an earlier --keep DIR: give that DIR")
    env = tick_env()
    root = args.keep or Path(tempfile.mkdtemp(prefix="outerloop-busy-"))
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    ledger, demo_bytes = demo_template(root, env, reuse=args.reuse)
    tpl = Template(ledger)
    records = sum(len(line) + 1 for line in (ledger / "tick.jsonl").read_text().splitlines()
                  if '"kind":"intent"' in line and '"publish_record"' in line)
    print(f"template: a real demo run ({time.monotonic() - t0:.0f}s), "
          f"{len(tpl.before) + len(tpl.run_lines) + len(tpl.after)} lines, "
          f"{demo_bytes / 1e3:.1f} KB of ledger of which {records / 1e3:.1f} KB research-log "
          f"records")
    for runs in args.runs or [10_000, 100_000]:
        measure(runs, tpl, demo_bytes, records, root, env, reuse=args.reuse)
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
