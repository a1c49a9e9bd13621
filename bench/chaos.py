"""Chaos: full research runs while ticks, jobs and agent sessions are killed at random.

Builds a home (local forge, local compute, a scripted agent) around a small target
with four benchmarks, one per outcome the agent's script leads to:

    gain     improves, is published, and stays in review     -> parked in review
    merge    improves, gets a reviewer comment, answers it,
             and the maintainer merges                       -> ended merged
    nogain   changes nothing that matters, stops after the
             verdict                                         -> ended negative-result
    outside  edits a file outside the contract's scope (the
             launch is refused), then stops                  -> ended negative-result

opens N issues (kinds drawn from the seed), then ticks in a loop. Ticks are real
``outerloop tick`` processes; most are killed with SIGKILL at a moment drawn from the
seed. Now and then a leg job (its runner and its process group: a node failure) or an
agent session (the process group of the step it is running) is killed instead, at most
once each per run. The agent is a state machine over its workspace and
``.outerloop/status.json``, as a real agent resumes from what it finds, so any leg may
be replayed after a kill. When every run has ended (its report posted) or is parked in
review, it checks:

- duplicates: more than one PR per run, a marker posted twice anywhere, two jobs
  under one name;
- lost: an issue whose last run did not end as its agent's script leads to, or an
  issue claimed, released or answered wrongly (one claim per run, every run but the
  last released, the last run's report posted once).

The last line is exactly ``chaos: N runs, K kills, D duplicates, L lost, E ended, P
parked``. Kill moments and targets are drawn from ``--seed``; timing of the world is
not, so figures can differ slightly between two runs with one seed.

    python bench/chaos.py --runs 6 --kills 60 --seed 7
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from outerloop.compute.local import LocalCompute  # noqa: E402
from outerloop.compute.local_records import read_record  # noqa: E402
from outerloop.config import Settings, load_settings  # noqa: E402
from outerloop.forge.local import LocalForge  # noqa: E402
from outerloop.home import init_home  # noqa: E402
from outerloop.kernel.lanes.intake import released  # noqa: E402
from outerloop.ledger.records import RunRecord  # noqa: E402
from outerloop.ledger.state import State, rebuild  # noqa: E402

TARGET = "chaos/target"
KINDS = ("gain", "merge", "nogain", "outside")
EXPECTED = {"gain": "review", "merge": "merged", "nogain": "negative-result",
            "outside": "negative-result"}
LEG_PURPOSES = ("climb", "wake", "recover")
MAINTAINER = "maintainer"
TICK_KILL_SHARE = 0.85
"""Of the ticks, about this share is killed while the budget lasts."""
JOB_KILL_SHARE = 0.12
"""Of the kills, about this share goes to jobs and sessions, the rest to ticks."""

EVALUATE = '''"""Score = 100 - the number of idea files under solver/<bench>/ (lower is better)."""
import json
import sys
from pathlib import Path

bench = sys.argv[1]
ideas = [p for p in Path("solver", bench).glob("*.txt")] if Path("solver", bench).is_dir() else []
print(f"{bench}: {len(ideas)} ideas", flush=True)
print(json.dumps({"score": 100 - len(ideas)}))
'''

IN_FLIGHT = 3
"""Runs climbing at once: the operator's ``max_active_attempts`` is kept at this plus
the runs left in review (``gain``), which hold an active slot each."""
CONTRACT_ACTIVE = 100
CONTRACT = "benchmarks:\n" + "".join(
    f"  - {{name: {kind}, command: python3 evaluate.py {kind}, metric: score, "
    f"direction: min, eval_minutes: 5}}\n" for kind in KINDS) + """\
budgets:
  gpu_hours_per_run: 0
  runs_per_week: 1000
  max_active_attempts: {active}
scope:
  allowed: [solver/]
roadmap: docs/roadmap.md
"""

AGENT = r'''set -u
tool="python3 .outerloop/syscall"
field() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]] or '')" \
    .outerloop/status.json "$1"
}
bench=$(field benchmark); run=$(field run_id); pr=$(field pr)
launches=$(field launches_used); sleeps=$(field sleeps_used)
report() { printf '# %s\n\nChaos agent for %s.\n' "$run" "$bench" > report.md; }
case "$bench" in
  gain|merge)
    if [ -n "$pr" ]; then
      $tool message --to thread "Thanks for the review of $run: the idea file is the whole change."
      $tool sleep
    elif [ "$launches" = 0 ]; then
      mkdir -p "solver/$bench" && echo idea > "solver/$bench/$run.txt"
      $tool launch --name try --minutes 5 --why "one more idea" -- python3 evaluate.py "$bench"
      $tool sleep
    else
      mkdir -p "solver/$bench" && echo idea > "solver/$bench/$run.txt"
      report
      [ "$bench" = gain ] && $tool message --to thread "Submitting $run for measurement."
      $tool submit --report report.md
      $tool sleep
    fi ;;
  nogain)
    if [ "$sleeps" = 0 ]; then
      mkdir -p solver/nogain && echo note > "solver/nogain/$run.md"
      report; $tool submit --report report.md; $tool sleep
    else
      report; $tool stop --report report.md
    fi ;;
  outside)
    if git diff --quiet -- evaluate.py; then
      echo "# tuned" >> evaluate.py
      $tool launch --name tuned --minutes 5 --why "a tuned evaluator" -- python3 evaluate.py outside
      $tool sleep
    else
      git checkout -- evaluate.py; report; $tool stop --report report.md
    fi ;;
esac
'''
LEGS = 16


def build_target(root: Path, active: int) -> Path:
    target = root / "target"
    (target / "solver").mkdir(parents=True)
    (target / "docs").mkdir()
    (target / "evaluate.py").write_text(EVALUATE)
    (target / "solver" / "README.md").write_text("Ideas live here, one file each.\n")
    (target / "docs" / "roadmap.md").write_text("# Roadmap\n")
    (target / ".gitignore").write_text("report.md\n__pycache__/\n")
    (target / ".outerloop.yaml").write_text(CONTRACT.replace("{active}", str(active)))
    return target


def build_home(root: Path, active: int) -> Settings:
    script = root / "agent.yaml"
    script.write_text(json.dumps({"legs": [[{"shell": AGENT}]] * LEGS}))
    home = root / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=[TARGET],
              script=str(script))
    config = home / "outerloop.toml"
    text = config.read_text().replace(
        "max_new_runs_per_tick = 1",
        "max_new_runs_per_tick = 1\ngrace_minutes = 0\nmax_active_attempts = 1")
    text = text.replace("tick_minutes = 10", "tick_minutes = 10\ntick_timeout_s = 30")
    config.write_text(text)
    settings = load_settings(home)
    forge(settings).import_repo(build_target(root, active), TARGET)
    return settings


def forge(settings: Settings) -> LocalForge:
    return LocalForge(settings.home / "forge", settings.forge.login)


@dataclass
class Chaos:
    settings: Settings
    rng: random.Random
    kill_budget: int
    tick_kill_share: float = TICK_KILL_SHARE
    in_flight: int = IN_FLIGHT
    kinds: dict[int, str] = field(default_factory=dict)
    kills: collections.Counter[str] = field(default_factory=collections.Counter)
    killed_jobs: set[str] = field(default_factory=set)
    """Runs whose leg job was killed (once each)."""
    killed_sessions: set[str] = field(default_factory=set)
    tick_s: float = 1.5
    """Running estimate of an unkilled tick's wall time: kill moments are drawn in it."""
    ticks: int = 0
    commented: set[int] = field(default_factory=set)
    merged: set[int] = field(default_factory=set)

    @property
    def home(self) -> Path:
        return self.settings.home

    @property
    def spent(self) -> int:
        return sum(self.kills.values())

    def tick(self) -> None:
        """One tick process; killed at a drawn moment while the budget lasts."""
        self.ticks += 1
        kill_at = None
        if self.spent < self.kill_budget and self.rng.random() < self.tick_kill_share:
            kill_at = self.rng.uniform(0.05, self.tick_s)
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "outerloop", "tick", "--home",
                                 str(self.home)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            proc.wait(timeout=kill_at if kill_at is not None else 300)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.kills["tick"] += 1
            return
        took = time.monotonic() - started
        self.tick_s = 0.7 * self.tick_s + 0.3 * took
        if proc.returncode != 0:
            err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
            print(f"  tick {self.ticks} exit {proc.returncode}: {err[-1] if err else ''}",
                  flush=True)
        if proc.stderr:
            proc.stderr.close()

    def maybe_kill_job(self, state: State) -> None:
        """Now and then kill one leg job (a node failure) or one agent session."""
        if self.spent >= self.kill_budget or self.rng.random() >= JOB_KILL_SHARE * 2:
            return
        choices: list[tuple[str, str, str]] = []
        for job in sorted(state.live_jobs(), key=lambda j: j.job_id):
            if job.purpose in LEG_PURPOSES and job.run and job.run not in self.killed_jobs:
                choices.append(("job", job.run, job.job_id))
        for run_id, pid in sorted(self.sessions(state).items()):
            if run_id not in self.killed_sessions:
                choices.append(("session", run_id, str(pid)))
        if not choices:
            return
        kind, run_id, what = self.rng.choice(choices)
        if kind == "job" and self.kill_job(what):
            self.killed_jobs.add(run_id)
            self.kills["job"] += 1
        elif kind == "session" and kill_group(int(what)):
            self.killed_sessions.add(run_id)
            self.kills["session"] += 1

    def kill_job(self, job_id: str) -> bool:
        record = read_record(LocalCompute(self.home / "jobs").job_dir(job_id))
        if record is None or record.state.terminal or record.runner_pid is None:
            return False
        signal_pid(record.runner_pid)
        for task in record.tasks.values():
            if task.pgid:
                kill_group(task.pgid)
        return True

    def sessions(self, state: State) -> dict[str, int]:
        """Run id -> pid of an agent step running in that run's workspace."""
        found: dict[str, int] = {}
        runs = {str(self.home / "runs" / r / "ws"): r for r in state.runs}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if cwd in runs and int(proc.name) == os.getpgid(int(proc.name)):
                found.setdefault(runs[cwd], int(proc.name))
        return found

    def maintain(self, state: State) -> None:
        """The maintainer: comments on a merge run's PR, merges once it is answered; and
        the operator: room for ``IN_FLIGHT`` climbing runs beside those left in review."""
        in_review = sum(1 for r in state.runs.values() if not r.ended
                        and self.kinds.get(r.issue or 0) == "gain" and r.pr_number is not None)
        chaos_slots(self.settings, self.in_flight + in_review)
        local = forge(self.settings)
        for run in state.runs.values():
            if run.ended or run.pr_number is None or self.kinds.get(run.issue or 0) != "merge":
                continue
            number = run.pr_number
            if number not in self.commented:
                local.comment_as(TARGET, number, "Why does this help?", MAINTAINER)
                self.commented.add(number)
            elif number not in self.merged and any(
                    "outerloop:reply" in c.body for c in local.list_comments(TARGET, number)):
                if local.get_pr(TARGET, number).draft:
                    local.mark_ready_as(TARGET, number, MAINTAINER)
                local.merge_pr(TARGET, number, MAINTAINER)
                self.merged.add(number)


def chaos_slots(settings: Settings, slots: int) -> None:
    """Set the operator's ``max_active_attempts`` (each tick process reads it anew)."""
    config = settings.home / "outerloop.toml"
    text = config.read_text()
    changed = re.sub(r"(?m)^max_active_attempts = \d+$", f"max_active_attempts = {slots}", text)
    if changed != text:  # whole or nothing: a tick may be reading it right now
        tmp = config.with_suffix(".toml.tmp")
        tmp.write_text(changed)
        os.replace(tmp, config)


def signal_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def kill_group(pgid: int) -> bool:
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def runs_by_issue(state: State) -> dict[int, list[RunRecord]]:
    out: dict[int, list[RunRecord]] = collections.defaultdict(list)
    for run in sorted(state.runs.values(), key=lambda r: (r.queued_at, r.run_id)):
        if run.issue is not None:
            out[run.issue].append(run)
    return out


def finished(run: RunRecord, kind: str) -> bool:
    """Ended with its report posted, or (a ``gain`` run) parked in review. A released
    run (failed to start) is not: its issue is claimed again."""
    if run.ended:
        return run.report_posted and not released(run)
    return kind == "gain" and run.state == "parked" and run.park_reason == "review"


def all_finished(chaos: Chaos, state: State) -> bool:
    by_issue = runs_by_issue(state)
    return all(number in by_issue and finished(by_issue[number][-1], kind)
               for number, kind in chaos.kinds.items())


def markers(local: LocalForge, numbers: list[int]) -> collections.Counter[str]:
    seen: collections.Counter[str] = collections.Counter()
    for number in numbers:
        for comment in local.list_comments(TARGET, number):
            for line in comment.body.splitlines():
                if line.startswith("<!-- outerloop:"):
                    seen[line] += 1
    return seen


def check(chaos: Chaos, state: State) -> tuple[int, list[str], int, int]:
    """(duplicates, lost with reasons, ended, parked)."""
    local = forge(chaos.settings)
    duplicates = 0
    names = chaos.home / "jobs" / "names"
    for folder in sorted(names.iterdir()) if names.exists() else []:
        ids = [p for p in folder.iterdir() if p.name.isdigit()]  # not `latest`, a .tmp
        if len(ids) > 1:
            duplicates += len(ids) - 1
            print(f"  duplicate: job name {folder.name} submitted {len(ids)} times")
    prs = local.list_prs(TARGET, "all")
    per_head = collections.Counter(pr.head for pr in prs)
    for head, count in per_head.items():
        if count > 1:
            duplicates += count - 1
            print(f"  duplicate: {count} PRs from {head}")
    seen = markers(local, sorted(chaos.kinds) + [pr.number for pr in prs])
    for line, count in seen.items():
        if count > 1:
            duplicates += count - 1
            print(f"  duplicate: {line} posted {count} times")
    lost: list[str] = []
    ended = parked = 0
    by_issue = runs_by_issue(state)
    for number, kind in sorted(chaos.kinds.items()):
        runs = by_issue.get(number, [])
        if not runs:
            lost.append(f"issue #{number} ({kind}): never claimed")
            continue
        last = runs[-1]
        claims = sum(1 for line in seen if line.startswith("<!-- outerloop:claim ")
                     and any(r.run_id in line for r in runs))
        reports = [line for line in seen if line.startswith("<!-- outerloop:report ")
                   and last.run_id in line]
        for early in runs[:-1]:
            if not (early.ended and (early.outage or (early.ending == "aborted"
                                                      and early.legs == 0))):
                lost.append(f"issue #{number} ({kind}): run {early.run_id} ended "
                            f"{early.ending} after {early.legs} legs, yet was claimed again")
        outcome = last.ending if last.ended else (
            "review" if last.state == "parked" and last.park_reason == "review"
            else f"{last.state}/{last.park_reason}")
        if last.ended:
            ended += 1
        elif outcome == "review":
            parked += 1
        if outcome != EXPECTED[kind]:
            lost.append(f"issue #{number} ({kind}): ended {outcome}, its script leads to "
                        f"{EXPECTED[kind]} (run {last.run_id}; {describe(state, last)})")
        if claims != len(runs):
            lost.append(f"issue #{number} ({kind}): {claims} claim markers for "
                        f"{len(runs)} runs")
        if last.ended and len(reports) != 1:
            lost.append(f"issue #{number} ({kind}): {len(reports)} reports")
    return duplicates, lost, ended, parked


def describe(state: State, run: RunRecord) -> str:
    """What a lost run was left holding, for the CI log: enough to tell where it stopped."""
    jobs = ", ".join(f"{j.purpose} {j.job_id} {j.state}" for j in
                     (state.jobs[i] for i in run.job_ids if i in state.jobs))
    return (f"legs {run.legs}, leg open {run.leg_open}, feedback {sorted(run.feedback)}, "
            f"undelivered {sorted(run.undelivered)}, outbox {sorted(run.outbox)}, "
            f"posted {sorted(run.posted)}, pr {run.pr_number}, jobs: {jobs or 'none'}")


def cleanup(settings: Settings) -> None:
    compute = LocalCompute(settings.home / "jobs")
    for row in compute.queue():
        compute.cancel(row.job_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--kills", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout-s", type=float, default=None,
                        help="give up after this long (default 300 + 120 per run)")
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT,
                        help="runs climbing at once (fewer: longer runs, more kills)")
    parser.add_argument("--tick-kill-share", type=float, default=TICK_KILL_SHARE,
                        help="share of ticks killed while the budget lasts")
    parser.add_argument("--keep", action="store_true", help="keep the home for inspection")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="outerloop-chaos-"))
    kinds = [KINDS[i % len(KINDS)] for i in range(args.runs)]
    rng.shuffle(kinds)
    settings = build_home(root, CONTRACT_ACTIVE)
    chaos_slots(settings, args.in_flight)
    chaos = Chaos(settings, rng, args.kills, args.tick_kill_share, in_flight=args.in_flight)
    local = forge(settings)
    for index, kind in enumerate(kinds, start=1):
        issue = local.open_issue_as(TARGET, f"Idea {index} for {kind}",
                                    f"Try one more idea on the {kind} benchmark.", MAINTAINER)
        chaos.kinds[issue.number] = kind
    print(f"chaos home {root} (seed {args.seed}): issues {dict(chaos.kinds)}", flush=True)
    deadline = time.monotonic() + (args.timeout_s or 300 + 120 * args.runs)
    started = time.monotonic()
    try:
        while True:
            chaos.tick()
            state = rebuild(settings.home, save_cache=False)
            if all_finished(chaos, state) or time.monotonic() > deadline:
                break
            chaos.maintain(state)
            chaos.maybe_kill_job(state)
        for _ in range(3):  # settle: anything the last ticks started is recorded
            chaos.tick_s = 1e9
            chaos.kill_budget = 0
            chaos.tick()
        state = rebuild(settings.home, save_cache=False)
        duplicates, lost, ended, parked = check(chaos, state)
    finally:
        cleanup(settings)
    for line in lost:
        print(f"  lost: {line}")
    print(f"  {chaos.ticks} ticks in {time.monotonic() - started:.0f} s; kills: "
          f"{dict(chaos.kills)}", flush=True)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"chaos: {args.runs} runs, {chaos.spent} kills, {duplicates} duplicates, "
          f"{len(lost)} lost, {ended} ended, {parked} parked", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
