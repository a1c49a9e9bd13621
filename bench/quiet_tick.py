"""Quiet-tick benchmark: 10,000 ended runs in the ledger (about 30 events each).

Prints the wall time and peak memory of a cold rebuild (no fold cache) and of a quiet
`outerloop tick` (nothing to do: no event appended, no effect performed). Targets:
tick <= 1 s, <= 200 MB; cold rebuild >= 200,000 events/s; at 100,000 runs (issue 15)
tick <= 0.5 s, <= 150 MB and cold rebuild <= 500 MB. The figures are printed whether or
not they are met; nothing here asserts. Each writer's lines are in time order and carry
the logical clock and the hash chain (``prev``), as today's writers write them. The
history is committed to the ledger's git before the ticks are timed (as the ticks that
wrote it would have), so the first tick times the fold and the attestation of every
file's head, not a `git add` of 100,000 new files.

The hash chain's share of the quiet tick (issue 26; target <= 5 % at 100,000 runs) is
printed two ways: the self time of the chain's code (``ledger/chain.py``,
``ledger/attest.py``, ``integrity.chain_problem`` and ``unread_changes``) in a profile of
one quiet tick, and the best CPU time of quiet ticks run with the chain's work left out
(``--no-chain``'s patch, in the bench's child only: links not hashed nor compared, no
attestation, no pre-commit check) against ticks run as they are.

    python bench/quiet_tick.py [--runs 10000] [--keep DIR] [--reuse] [--chain-rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = "demo/tinytsp"
TARGET_DIR = "demo__tinytsp"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


_CLOCK = [0]
"""The writers' logical clock (``store.LogicalClock``): every line one more, in the order
the tick and the runs' jobs write them."""


def _line(seq: int, at: str, kind: str, run: str | None, **fields: object) -> str:
    _CLOCK[0] += 1
    event: dict[str, object] = {"v": 1, "seq": seq, "at": at, "lc": _CLOCK[0], "kind": kind}
    if run:
        event["run"] = run
    event.update(fields)
    return json.dumps(event, separators=(",", ":")) + "\n"


def _spec(name: str) -> dict[str, object]:
    """A submitted job's spec as the kernel records it (the fields without a default)."""
    return {"name": name, "command": "python evaluate.py", "workdir": "/w", "log_dir": "/l",
            "time_minutes": 30}


def _stamp(n: int, k: int) -> str:
    """Run ``n``'s ``k``-th moment: one run a minute, each writer's lines in time order."""
    return (T0 + timedelta(minutes=n, seconds=k % 60)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _chained(lines: list[str], link: list[str]) -> str:
    """``lines`` with their hash chain (``ledger/chain.py``) from ``link[0]``, which is
    moved on: as today's writers write them."""
    from outerloop.ledger import chain

    out = []
    for text in lines:
        line = chain.with_prev(text.rstrip("\n").encode(), link[0])
        link[0] = chain.line_hash(line)
        out.append(line.decode() + "\n")
    return "".join(out)


def write_history(home: Path, runs: int) -> int:
    """Append ``runs`` ended runs straight into the ledger files; returns event count."""
    from outerloop.ledger import chain
    ledger = home / "ledger" / TARGET_DIR
    (ledger / "runs").mkdir(parents=True, exist_ok=True)
    events = 0
    tick_seq = 0
    tick_link = [chain.GENESIS]
    with (ledger / "tick.jsonl").open("a") as tick:
        for n in range(runs):
            run = f"tour-{n:06d}-agent-01"
            lines_tick: list[str] = []

            def t(kind: str, n: int = n, run: str = run, lines: list[str] = lines_tick,
                  **fields: object) -> None:
                nonlocal tick_seq
                tick_seq += 1
                lines.append(_line(tick_seq, _stamp(n, len(lines)), kind, run, **fields))

            t("run_queued", target=TARGET, benchmark="tour", agent="agent-01", issue=n + 1,
              issue_title="Shorter tours", hypothesis="Try 2-opt on tour.")
            key = f"comment:{TARGET}#{n + 1}:claim:{run}"
            t("intent", key=key, action={"kind": "post_comment", "target": TARGET, "run": run,
                                         "number": n + 1, "body": "claim",
                                         "marker_kind": "claim", "marker_key": run})
            t("done", key=key, result={"comment_id": n})
            t("intent", key=f"workspace:{run}", action={
                "kind": "prepare_workspace", "target": TARGET, "run": run, "base": "a" * 40,
                "branch": f"outerloop/agent-01/{run}"})
            t("done", key=f"workspace:{run}", result={"base": "a" * 40})
            job = str(10_000_000 + n * 6)
            t("intent", key=f"job:ol-{run}-climb", action={
                "kind": "submit_job", "target": TARGET, "run": run, "purpose": "climb",
                "spec": _spec(f"ol-{run}-climb")})
            t("done", key=f"job:ol-{run}-climb", result={"job_id": job})
            tick.write(_chained(lines_tick, tick_link))
            events += len(lines_tick)
            lines_run: list[str] = []

            def r(kind: str, n: int = n, run: str = run, lines: list[str] = lines_run,
                  **fields: object) -> None:
                lines.append(_line(len(lines) + 1, _stamp(n, 20 + len(lines)), kind, run,
                                   **fields))

            r("leg_started", leg=1, role="climb", job_id=job)
            r("leg_ended", leg=1, stop_reason="end_turn", session_id="s", request={
                "verb": "sleep", "launches": [], "submit": None, "messages": []})
            for j in (1, 2):
                r("intent", key=f"job:ol-{run}-x{j}", action={
                    "kind": "submit_job", "target": TARGET, "run": run, "purpose": "launch",
                    "spec": _spec(f"ol-{run}-x{j}")})
                r("done", key=f"job:ol-{run}-x{j}", result={"job_id": str(int(job) + j)})
            r("launched", sleep=1, name="try", job_id=str(int(job) + 1), minutes=5,
              command="python evaluate.py", seal="b" * 40)
            r("parked", reason="jobs", job_ids=[str(int(job) + 1)], wake_job=str(int(job) + 2))
            r("leg_started", leg=2, role="wake", job_id=str(int(job) + 2))
            r("leg_ended", leg=2, stop_reason="end_turn", session_id="s", request={
                "verb": "sleep", "launches": [], "submit": {"report": "r"}, "messages": []})
            r("seeds_drawn", submission=1, seeds=[12345])
            for j in (3, 4, 5):
                r("intent", key=f"job:ol-{run}-x{j}", action={
                    "kind": "submit_job", "target": TARGET, "run": run, "purpose": "eval",
                    "spec": _spec(f"ol-{run}-x{j}")})
                r("done", key=f"job:ol-{run}-x{j}", result={"job_id": str(int(job) + j)})
            r("parked", reason="eval", job_ids=[str(int(job) + 3), str(int(job) + 4)],
              wake_job=str(int(job) + 5))
            r("verdict", verdict="no-improvement", benchmark="tour", baseline="7.5",
              candidate="7.5", seeds=1)
            r("run_ended", ending="negative-result", report="# report\n\nnothing gained\n")
            (ledger / "runs" / f"{run}.jsonl").write_text(_chained(lines_run,
                                                                   [chain.GENESIS]))
            ends = []
            for j in range(6):
                tick_seq += 1
                ends.append(_line(tick_seq, _stamp(n, 50 + j), "job_ended", run,
                                  job_id=str(int(job) + j), state="completed", exit_code=0,
                                  elapsed_s=3))
            key = f"comment:{TARGET}#{n + 1}:report:{run}"
            for kind, fields in (
                    ("intent", {"key": key, "action": {
                        "kind": "post_comment", "target": TARGET, "run": run,
                        "number": n + 1, "body": "report", "marker_kind": "report",
                        "marker_key": run}}),
                    ("done", {"key": key, "result": {"comment_id": n}}),
                    ("intent", {"key": f"record:{TARGET}:{n}", "action": {
                        "kind": "publish_record", "target": TARGET, "branch": "research-log",
                        "files": {}, "reports": [run], "summary": "s", "digest": str(n)}}),
                    ("done", {"key": f"record:{TARGET}:{n}", "result": {"reports": [run]}}),
                    ("intent", {"key": f"clean:{run}", "action": {
                        "kind": "clean_workspace", "target": TARGET, "run": run}}),
                    ("done", {"key": f"clean:{run}", "result": {"freed_bytes": 0}}),
                    ("intent", {"key": f"prune:{run}", "action": {
                        "kind": "prune_jobs", "target": TARGET, "run": run}}),
                    ("done", {"key": f"prune:{run}", "result": {"freed_bytes": 0}})):
                tick_seq += 1
                owner = None if str(fields["key"]).startswith("record") else run
                ends.append(_line(tick_seq, _stamp(n, 58), kind, owner, **fields))
            tick.write(_chained(ends, tick_link))
            events += len(ends)
            events += len(lines_run)
    return events


def commit_history(home: Path) -> None:
    """Commit the history written straight into the files, without a git timeout."""
    ledger = home / "ledger"
    for argv in (["add", "-A", "."], ["commit", "-q", "-m", "history"]):
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *argv], cwd=ledger,
                       check=True, capture_output=True)


CPU: list[float] = []
"""CPU seconds (user + sys) of each child timed: on a shared machine the wall time
varies with the load, the CPU time much less."""


def tick_env() -> dict[str, str]:
    """The environment the timed ticks run in: this one, with this checkout first on the
    path and Python's default of keeping compiled modules. ``PYTHONDONTWRITEBYTECODE``
    (set in some containers) would have every tick recompile outerloop's sources from an
    editable install, ~0.15 s that is the environment's, not the tick's
    (docs/operate.md, "What a tick costs")."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        print("(PYTHONDONTWRITEBYTECODE is set here; the timed ticks run without it)")
    return env


REFERENCE = "import pydantic.main, click, yaml"
"""A fixed workload beside the timed ticks: Python starting and importing three of the
tick's libraries. On a shared VM the same tick, same calls, takes 0.24 s one minute and
0.41 s the next; this figure moves with it and says which moment a tick's was taken in."""


def machine_reference(env: dict[str, str]) -> str:
    """The reference workload's wall time, best and worst of 3, as printed words, and
    the interpreter's own start (best of 3) with and without ``site`` (the ``.pth``
    files of site-packages run at every start: a container's may import certifi)."""
    walls = [timed_child([sys.executable, "-c", REFERENCE], env)[0] for _ in range(3)]
    bare = min(timed_child([sys.executable, "-c", "pass"], env)[0] for _ in range(3))
    no_site = min(timed_child([sys.executable, "-S", "-c", "pass"], env)[0] for _ in range(3))
    del CPU[-9:]
    return (f"machine reference (python -c '{REFERENCE}'): {min(walls):.2f}s best / "
            f"{max(walls):.2f}s worst of 3; python -c pass {bare * 1000:.0f} ms "
            f"(-S: {no_site * 1000:.0f} ms)")


def timed_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout) of one child process; its CPU seconds
    (user + sys) are kept in ``CPU``, the last one at the end."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as errors:  # a pipe nobody reads would fill
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=env,
                                text=True)
        out = proc.stdout.read() if proc.stdout else ""  # read before waiting: same
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        CPU.append(usage.ru_utime + usage.ru_stime)
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            raise SystemExit(f"{argv} failed: {errors.read()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out


NO_CHAIN = """
from outerloop.ledger import attest, chain, integrity


def follow(link, lines, first, *, all_breaks=False):
    if lines:
        link.value, link.chained = chain.GENESIS, True
    return []


chain.follow = follow
attest.attest = lambda home, heads, skip=(): 0
integrity.unread_changes = lambda *args, **kwargs: []
integrity.chain_problem = lambda path, offset, link: None
"""
"""The chain's work left out, in the child process only (``--no-chain``)."""

TICK = """
import sys
{patch}
from outerloop.cli import entry
entry(["tick", "--home", sys.argv[1]])  # as `outerloop tick` runs: no teardown
"""

PROFILED = """
import cProfile, pstats, sys, time
from outerloop.cli import main
profile = cProfile.Profile(time.process_time)  # CPU time: the machine's load aside
start = time.perf_counter()
profile.enable()
main(["tick", "--home", sys.argv[1]], standalone_mode=False)
profile.disable()
wall = time.perf_counter() - start
CHAIN_FILES = ("outerloop/ledger/chain.py", "outerloop/ledger/attest.py")
CHAIN_FUNCS = {("outerloop/ledger/integrity.py", "chain_problem"),
               ("outerloop/ledger/integrity.py", "unread_changes")}
chain_s, total_s, calls = 0.0, 0.0, 0
for (path, _, name), (_, ncalls, self_s, _, _) in pstats.Stats(profile).stats.items():
    total_s += self_s
    if path.endswith(CHAIN_FILES) or any(path.endswith(f) and name == n
                                         for f, n in CHAIN_FUNCS):
        chain_s += self_s
        calls += ncalls
print(chain_s, total_s, calls, wall)
"""


def chain_share(home: Path, env: dict[str, str], rounds: int) -> None:
    """The chain's share of a quiet tick, profiled and as an A/B of CPU time."""
    out = timed_child([sys.executable, "-c", PROFILED, str(home)], env)[2]
    chain_s, total_s, calls, wall = out.split()[-4:]
    print(f"chain in a profiled quiet tick: {float(chain_s) * 1000:.1f} ms self time in "
          f"{calls} calls of the chain's code, of {float(total_s) * 1000:.0f} ms profiled "
          f"of CPU ({float(wall):.2f}s wall under the profiler): "
          f"{100 * float(chain_s) / max(float(total_s), 1e-9):.2f} %  [target <= 5 %]")
    cpu: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(rounds):  # interleaved: the machine's load falls on both alike
        for label, patch in (("with", ""), ("without", NO_CHAIN)):
            timed_child([sys.executable, "-c", TICK.format(patch=patch), str(home)], env)
            cpu[label].append(CPU[-1])
    best_with, best_without = min(cpu["with"]), min(cpu["without"])
    print(f"quiet tick CPU, best of {rounds}: {best_with:.3f}s with the chain, "
          f"{best_without:.3f}s without (--no-chain's patch): the chain "
          f"{1000 * (best_with - best_without):+.1f} ms, "
          f"{100 * (best_with - best_without) / max(best_with, 1e-9):+.2f} %  "
          f"[target <= 5 %]; medians {sorted(cpu['with'])[rounds // 2]:.3f}s / "
          f"{sorted(cpu['without'])[rounds // 2]:.3f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, default=None, help="build the home here, keep it")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: time the home built there before (no history "
                             "written, no cold rebuild)")
    parser.add_argument("--chain-rounds", type=int, default=5,
                        help="quiet ticks with and without the chain's work (0: none)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from outerloop.forge.local import LocalForge
    from outerloop.home import init_home

    root = args.keep or Path(tempfile.mkdtemp(prefix="outerloop-bench-"))
    home = root / "home"
    env = tick_env()
    if args.reuse and args.keep and (home / "outerloop.toml").is_file():
        timed_child([sys.executable, "-m", "outerloop", "tick", "--home", str(home)], env)
        chain_share(home, env, args.chain_rounds)
        return
    settings = init_home(home, forge="local", compute="local", harness="scripted",
                         targets=[TARGET], script=str(REPO / "examples/agents/tinytsp-2opt.yaml"))
    LocalForge(home / "forge", settings.forge.login).import_repo(REPO / "examples/tinytsp",
                                                                 TARGET)
    t0 = time.monotonic()
    events = write_history(home, args.runs)
    print(f"history: {args.runs} ended runs, {events} events "
          f"({events / max(args.runs, 1):.0f} per run), written in {time.monotonic() - t0:.1f}s")
    t0 = time.monotonic()
    commit_history(home)
    print(f"history committed to the ledger's git in {time.monotonic() - t0:.1f}s (as the "
          f"ticks that wrote it would have; a first tick's `git add` of 100,000 new files "
          f"can outlast its 60 s git timeout on a loaded machine)")
    cold = ("import sys, time; from pathlib import Path; "
            "from outerloop.ledger.book import rebuild; t=time.monotonic(); "
            "s=rebuild(Path(sys.argv[1]), use_cache=False, save_cache=False); "
            "print(s.events, time.monotonic()-t)")
    wall, rss, out = timed_child([sys.executable, "-c", cold, str(home)], env)
    folded, fold_s = out.split()
    print(f"cold rebuild: {float(fold_s):.2f}s fold ({int(folded) / max(float(fold_s), 1e-9):,.0f} "
          f"events/s), {wall:.2f}s process wall, {CPU[-1]:.2f}s CPU, peak {rss:.0f} MB  "
          f"[target >= 200,000 events/s]")
    tick = [sys.executable, "-m", "outerloop", "tick", "--home", str(home)]
    wall, rss, out = timed_child(tick, env)
    print(f"first tick (builds the fold cache, commits history): {wall:.2f}s, "
          f"{CPU[-1]:.2f}s CPU, peak {rss:.0f} MB")
    wall, rss, out = timed_child(tick, env)
    print(f"second tick (folds the events the first one wrote, renders the board): "
          f"{wall:.2f}s, {CPU[-1]:.2f}s CPU, peak {rss:.0f} MB")
    walls, peaks = [], []
    for _ in range(3):
        wall, rss, out = timed_child(tick, env)
        walls.append(wall)
        peaks.append(rss)
    cpus = CPU[-3:]
    print(f"quiet tick: {min(walls):.2f}s best / {max(walls):.2f}s worst of 3, "
          f"{min(cpus):.2f}s CPU best, peak {max(peaks):.0f} MB  [targets <= 1 s, <= 200 MB; "
          f"at 100,000 runs <= 0.5 s, <= 150 MB]  ({out.strip()})")
    if args.chain_rounds:
        chain_share(home, env, args.chain_rounds)
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    _ = resource  # peak memory comes from wait4's rusage


if __name__ == "__main__":
    main()
