"""Chaos: full research runs while ticks, jobs and agent sessions are killed at random
and the forge, the disk and the submitter fail.

Builds a home (local forge, local compute, a scripted agent) around a small target
with four benchmarks, one per outcome the agent's script leads to:

    gain     launches, reads its result, improves, is
             published, and stays in review              -> parked in review
    merge    the same, gets a reviewer comment, answers
             it, and the maintainer merges               -> ended merged
    nogain   launches, reads its result, submits a change
             that does not matter, stops after the
             verdict                                     -> ended negative-result
    outside  edits a file outside the contract's scope (the
             launch is refused), reverts, launches, reads
             its result, then stops                      -> ended negative-result

opens N issues (kinds drawn from the seed), then ticks in a loop. Ticks are real
``outerloop tick`` processes; most are killed with SIGKILL at a moment drawn from the
seed. Now and then a leg job or an experiment's launch job (its runner and its process
group: a node failure) or an agent session (the process group of the step it is
running) is killed instead, at most once each per run. Beside the kills, ``--faults``
(all by default; ``none`` for kills only) injects the faults of
``bench/chaos_faults.py``: the forge failing git clone and fetch (502s, timeouts), a
full disk under the workspaces, a submitter that dies as its job appears (local
compute's ambiguous submit), reviewer comments posted while a tick
runs, the forge refusing the kernel's rights to publish (403), a maintainer's commits on
the branches it publishes on, and the home's ledger restored from a backup (with a
ledger remote to catch up from). The agent is a state machine over its workspace and
``.outerloop/status.json``, as a real agent resumes from what it finds, so any leg may
be replayed after a kill.
When every run has ended (its report posted) or is parked in review, it checks:

- duplicates: more than one open or merged PR per run (a run whose branch a
  maintainer moved publishes on a fresh branch: one PR still, from another head), two
  PRs from one head, a marker posted twice anywhere, two jobs under one name (by the
  name index, the job directories and the ledger);
- lost: an issue whose last run did not end as its agent's script leads to, an issue
  claimed, released or answered wrongly (one claim per run, every run but the last
  released, the last run's report posted once), an issue no run of which started, a
  reviewer comment that never reached the agent, a hand-over saved on a research line
  (the ``merge`` kind has ``lines: true``) that no line branch on the forge holds;
- stuck: an issue's last run neither ended nor parked in review that waits on a human
  or on a publish step once every fault closed and the settle ticks ran (a refusal
  whose cause is gone must not hold a run).

It prints the stages reached (runs that launched, wakes with results, verdicts by kind)
and the faults injected, and exits 1 when a kind present never reached one of its
stages (the benchmark would then prove nothing about it). The last line is exactly
``chaos: N runs, K kills, D duplicates, L lost, S stuck, E ended, P parked``. Kill moments,
targets and fault windows are drawn from ``--seed``; timing of the world is not, so
figures can differ slightly between two runs with one seed.

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

from bench import chaos_check as checks  # noqa: E402
from bench import chaos_faults as faults  # noqa: E402
from bench.chaos_agent import AGENT, CONTRACT_ACTIVE, KINDS, LEGS, build_target  # noqa: E402
from outerloop.compute.local import LocalCompute  # noqa: E402
from outerloop.compute.local_records import (  # noqa: E402
    read_record,
    read_runner_pid,
    read_spec,
)
from outerloop.config import Settings, load_settings  # noqa: E402
from outerloop.forge.local import LocalForge  # noqa: E402
from outerloop.home import init_home  # noqa: E402
from outerloop.ledger.book import rebuild  # noqa: E402
from outerloop.ledger.state import RunRecord, State  # noqa: E402
from outerloop.line_paths import line_head  # noqa: E402

TARGET = "chaos/target"
LEG_PURPOSES = ("climb", "wake", "recover")
MAINTAINER = "maintainer"
TICK_KILL_SHARE = 0.85
"""Of the ticks, about this share is killed while the budget lasts."""
JOB_KILL_SHARE = 0.12
"""Of the kills, about this share goes to jobs and sessions, the rest to ticks."""

IN_FLIGHT = 3
"""Runs climbing at once: the operator's ``max_active_attempts`` is kept at this plus
the runs left in review (``gain``), which hold an active slot each."""
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
    text = text.replace("grace_minutes = 0", f"grace_minutes = 0\nhuman_retry_minutes = "
                        f"{faults.HUMAN_RETRY_MINUTES}")
    if os.environ.get("PYTHONPATH"):  # a worktree under test: its jobs run its code too
        text = text.replace("[compute]\n", "[compute]\npass_env = [\"PYTHONPATH\"]\n", 1)
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
    killed_launches: set[str] = field(default_factory=set)
    """Runs whose launch job (an experiment) was killed (once each)."""
    tick_s: float = 1.5
    """Running estimate of an unkilled tick's wall time: kill moments are drawn in it."""
    ticks: int = 0
    commented: set[int] = field(default_factory=set)
    merged: set[int] = field(default_factory=set)
    git: faults.GitFault | None = None
    disk: faults.DiskFault | None = None
    submit: bool = False
    comments: faults.Comments | None = None
    publish: faults.PublishFault | None = None
    moves: faults.Moves | None = None
    restore: faults.RestoreFault | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    window_chance: float = faults.WINDOW_CHANCE

    @property
    def home(self) -> Path:
        return self.settings.home

    @property
    def spent(self) -> int:
        return sum(self.kills.values())

    @property
    def faulting(self) -> bool:
        """Faults open new windows only while the kill budget lasts."""
        return self.spent < self.kill_budget

    def tick(self, targets: list[tuple[str, int, str]] | None = None) -> None:
        """One tick process; killed at a drawn moment while the budget lasts, or (the
        ``submit`` fault) the moment a new job appears; ``targets`` get comments posted
        while it runs."""
        self.ticks += 1
        kill_at = None
        watch_submit = False
        if self.spent < self.kill_budget:
            if self.submit and self.rng.random() < faults.SUBMIT_SHARE:
                watch_submit = True
            elif self.rng.random() < self.tick_kill_share:
                kill_at = self.rng.uniform(0.05, self.tick_s)
        delay = self.rng.uniform(0.0, 0.05)
        jobs_dir = self.home / "jobs"
        known = faults.submit_watch(jobs_dir)
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "outerloop", "tick", "--home",
                                 str(self.home)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=self.env)
        if self.comments is not None:
            self.comments.tick_running.set()
            if targets:
                self.comments.burst(self.rng, targets, self.tick_s)
        try:
            killed = self._wait(proc, started, kill_at, known if watch_submit else None,
                                jobs_dir, delay)
        finally:
            if self.comments is not None:
                self.comments.tick_running.clear()
                self.comments.join()
        if killed:
            self.kills[killed] += 1
            if proc.stderr:
                proc.stderr.close()
            return
        took = time.monotonic() - started
        self.tick_s = 0.7 * self.tick_s + 0.3 * took
        if proc.returncode != 0:
            err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
            print(f"  tick {self.ticks} exit {proc.returncode}: {err[-1] if err else ''}",
                  flush=True)
        if proc.stderr:
            proc.stderr.close()

    def _wait(self, proc: subprocess.Popen[str], started: float, kill_at: float | None,
              known: set[str] | None, jobs_dir: Path, delay: float) -> str | None:
        """Wait for the tick; the kind of kill that ended it, or None."""
        if known is None:
            try:
                proc.wait(timeout=kill_at if kill_at is not None else 300)
                return None
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                return "tick"
        while proc.poll() is None:
            if time.monotonic() - started > 300:
                break
            if faults.submit_watch(jobs_dir) - known:
                time.sleep(delay)
                if proc.poll() is not None:
                    return None
                proc.kill()
                proc.wait()
                return "submit"
            time.sleep(faults.SUBMIT_POLL_S)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        return None

    @property
    def windows_open(self) -> bool:
        """A fault window is open or a backup waits to be put back."""
        return any(f is not None and f.window.is_open for f in (self.git, self.disk,
                                                                self.publish)) or (
            self.restore is not None and self.restore.pending)

    def faults_turn(self, state: State) -> bool:
        """Close the fault windows that are due, put a due backup back; open new windows
        (take backups) while kills last, move branches at any turn. True when a backup was put back:
        ``state`` (which may read the cache lazily) is then stale."""
        for fault in (self.git, self.disk):
            if fault is not None and fault.window.due():
                fault.close()
        if self.publish is not None and self.publish.window.due() and (
                self.publish.window.count > 1 or refused(state)
                or self.publish.window.overdue(faults.PUBLISH_FIRST_MAX_S)):
            self.publish.close()
        if self.restore_turn(state):
            return True
        self.moves_turn(state)  # (one per branch, whatever the kills: kills run out before
        if not self.faulting:   # most runs have a branch to move, and they settle anyway)
            return False
        if self.git is not None and not self.git.window.is_open:
            if self.git.window.count == 0:
                self.git.open(faults.GIT_FIRST_WINDOW_S, "502")
            elif self.rng.random() < self.window_chance:
                self.git.open(self.rng.uniform(*faults.GIT_WINDOW_S),
                              self.rng.choice(("502", "timeout")))
        if self.disk is not None and self.disk.mounted and not self.disk.window.is_open:
            live = any(j.purpose in (*LEG_PURPOSES, "launch") for j in state.live_jobs())
            if (self.disk.window.count == 0 and live) or (
                    self.disk.window.count > 0 and self.rng.random() < self.window_chance):
                self.disk.open(self.rng.uniform(*faults.DISK_WINDOW_S))
        self.publish_turn(state)
        return False

    def publish_turn(self, state: State) -> None:
        """The first window opens once a run that publishes waits for its gate, and
        stays open until the forge refused a publish step (at most
        ``PUBLISH_FIRST_MAX_S``); later ones open at random."""
        if self.publish is None or self.publish.window.is_open:
            return
        if self.publish.window.count == 0:
            if not any(not r.ended and r.pr_number is None and r.park_reason == "eval"
                       and self.kinds.get(r.issue or 0) in ("gain", "merge")
                       for r in state.runs.values()):
                return
        elif self.rng.random() >= self.window_chance:
            return
        self.publish.open(self.rng.uniform(*faults.PUBLISH_WINDOW_S),
                          self.rng.choice(sorted(faults.PUBLISH_MODES)))

    def moves_turn(self, state: State) -> None:
        """The maintainer moves one branch: a credited candidate's before its first PR,
        a PR's in review (never one merged), or a research line already on the forge
        (its run's next push then goes to a fresh line branch, ``agents/<agent>-2``)."""
        if self.moves is None:
            return
        choices: list[tuple[str, str, str]] = []
        for run in sorted(state.runs.values(), key=lambda r: r.run_id):
            if run.ended:
                continue
            if run.publish is not None and run.pr_number is None \
                    and not self.moves.done(run.run_id, "unpublished"):
                choices.append((run.run_id, "unpublished", run.publish.branch))
            elif run.pr_number is not None and run.pr_head and run.pr_number not in \
                    self.merged and not self.moves.done(run.run_id, "review"):
                choices.append((run.run_id, "review", run.pr_head))
            if run.line is not None and run.line.pushed \
                    and not self.moves.done(run.run_id, "line"):
                choices.append((run.run_id, "line", line_head(run.line.branch,
                                                              run.line.moved)))
        if choices and self.rng.random() < faults.MOVE_CHANCE:
            self.moves.move(*self.rng.choice(choices))

    def ledger_writers(self, state: State) -> bool:
        """Whether a job that may append to the ledger is live: a leg (``outerloop attempt
        start`` or ``wake``, whatever the ledger knows of it; not an experiment or an
        eval pair) whose runner started: ``runner.pid`` (written by ``submit``) or the
        record's ``runner_pid`` (written by the runner itself: a submitter killed
        between starting it and writing ``runner.pid`` leaves a job that runs). A
        directory with neither was never started, or has not started yet."""
        compute = LocalCompute(self.home / "jobs")
        for row in compute.queue():
            job_dir = compute.job_dir(row.job_id)
            record = read_record(job_dir)
            if read_runner_pid(job_dir) is None and (record is None or not record.runner_pid):
                continue
            try:
                command = read_spec(job_dir).command
            except (OSError, ValueError):
                return True
            if " attempt start " in command or " attempt wake " in command:
                return True
        return False

    def restore_turn(self, state: State) -> bool:
        """Put a due backup back once the moment is right (no ledger writer live, the
        remote holding all the ledger holds); take one now and then while kills last
        (a leg may be appending: a torn last line is what a crash leaves too)."""
        restore = self.restore
        if restore is None:
            return False
        if restore.due_tick is not None:
            if self.ticks < restore.due_tick:
                return False
            if self.ledger_writers(state) or not restore.pushed():
                restore.postponed += 1
                return False
            restore.put_back()
            return True
        if self.faulting and self.rng.random() < faults.RESTORE_CHANCE:
            restore.take(self.ticks, self.rng)
        return False

    def close_faults(self) -> None:
        for fault in (self.git, self.disk, self.publish):
            if fault is not None:
                fault.close()

    def maybe_kill_job(self, state: State) -> None:
        """Now and then kill one leg job or launch job (a node failure) or one agent
        session."""
        if self.spent >= self.kill_budget or self.rng.random() >= JOB_KILL_SHARE * 2:
            return
        choices: list[tuple[str, str, str]] = []
        for job in sorted(state.live_jobs(), key=lambda j: j.job_id):
            if job.purpose in LEG_PURPOSES and job.run and job.run not in self.killed_jobs:
                choices.append(("job", job.run, job.job_id))
            elif job.purpose == "launch" and job.run and job.run not in self.killed_launches:
                choices.append(("launch", job.run, job.job_id))
        for run_id, pid in sorted(self.sessions(state).items()):
            if run_id not in self.killed_sessions:
                choices.append(("session", run_id, str(pid)))
        if not choices:
            return
        kind, run_id, what = self.rng.choice(choices)
        if kind == "job" and self.kill_job(what):
            self.killed_jobs.add(run_id)
            self.kills["job"] += 1
        elif kind == "launch" and self.kill_job(what):
            self.killed_launches.add(run_id)
            self.kills["launch"] += 1
        elif kind == "session" and kill_group(int(what)):
            self.killed_sessions.add(run_id)
            self.kills["session"] += 1

    def kill_job(self, job_id: str) -> bool:
        job_dir = LocalCompute(self.home / "jobs").job_dir(job_id)
        record = read_record(job_dir)
        written = read_runner_pid(job_dir)
        pid = record.runner_pid if record is not None and record.runner_pid else (
            written[0] if written is not None else None)
        if record is None or record.state.terminal or pid is None:
            return False
        signal_pid(pid)  # the runner, or the gate of a job still waiting (local_gate)
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
                if cwd in runs and int(proc.name) == os.getpgid(int(proc.name)):
                    found.setdefault(runs[cwd], int(proc.name))
            except OSError:
                continue
        return found

    def answered(self, run: RunRecord) -> bool:
        """Every comment chaos posted on ``run``'s PR reached the agent (the maintainer
        merges only then, so a comment is never left unread by the merge)."""
        if self.comments is None:
            return True
        return all(f"c{p.comment_id}" in run.delivered for p in self.comments.posted
                   if p.run_id == run.run_id)

    def maintain(self, state: State) -> list[tuple[str, int, str]]:
        """The maintainer: comments on a merge run's PR, merges once it is answered; and
        the operator: room for ``IN_FLIGHT`` climbing runs beside those left in review.
        Returns the comments to post while the next tick runs (the ``comments`` fault:
        the merge question, and bursts on the PRs of runs in review and of merge runs
        asked), else posts the question now."""
        in_review = sum(1 for r in state.runs.values() if not r.ended
                        and self.kinds.get(r.issue or 0) == "gain" and r.pr_number is not None)
        chaos_slots(self.settings, self.in_flight + in_review)
        local = forge(self.settings)
        targets: list[tuple[str, int, str]] = []
        for run in state.runs.values():
            if run.ended or run.pr_number is None or self.kinds.get(run.issue or 0) != "merge":
                continue
            number = run.pr_number
            if number not in self.commented:
                self.commented.add(number)
                if self.comments is not None:
                    targets.append((run.run_id, number, "Why does this help?"))
                else:
                    local.comment_as(TARGET, number, "Why does this help?", MAINTAINER)
            elif number not in self.merged and self.answered(run) and any(
                    "outerloop:reply" in c.body for c in local.list_comments(TARGET, number)):
                if local.get_pr(TARGET, number).draft:
                    local.mark_ready_as(TARGET, number, MAINTAINER)
                local.merge_pr(TARGET, number, MAINTAINER)
                self.merged.add(number)
        if self.comments is not None and self.comments.left > 0:  # its own budget
            review = [r for r in state.runs.values() if not r.ended and r.pr_number is not None
                      and r.pr_number not in self.merged
                      and (self.kinds.get(r.issue or 0) == "gain" or r.pr_number in self.commented)]
            if review and self.rng.random() < faults.BURST_CHANCE:
                for _ in range(min(self.comments.left, self.rng.randint(*faults.COMMENT_BURST))):
                    run = self.rng.choice(review)
                    assert run.pr_number is not None
                    targets.append((run.run_id, run.pr_number,
                                    f"Reviewer note {self.rng.randrange(10**6)}: why this?"))
        return targets


def refused(state: State) -> bool:
    """Whether the forge refused one of the kernel's publish steps for rights."""
    return any(key.startswith("pr:") and failed.cause == "rights"
               for key, failed in state.failures.items())


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


QUIET_TICKS = 8
"""Ticks with no job live, every issue's last run ended or parked in review (a merge
run waiting for the answer to a comment the agent never got) and no new run, after
which chaos stops waiting: what is left is lost work, and waiting for the deadline
would tell no more."""


def quiet(chaos: Chaos, state: State) -> tuple[int, bool]:
    """(runs, whether nothing more is under way)."""
    if any(True for _ in state.live_jobs()):
        return len(state.runs), False
    by_issue = checks.runs_by_issue(state)
    settled = all(number in by_issue and (by_issue[number][-1].ended or (
        by_issue[number][-1].state == "parked" and by_issue[number][-1].park_reason == "review"))
        for number in chaos.kinds)
    return len(state.runs), settled


def all_finished(chaos: Chaos, state: State) -> bool:
    by_issue = checks.runs_by_issue(state)
    if not all(number in by_issue and checks.finished(by_issue[number][-1], kind)
               for number, kind in chaos.kinds.items()):
        return False
    if chaos.comments is None or not chaos.comments.posted:
        return True
    # an ended run's record may be settled (its delivered ids dropped): check() reads
    # the ledger for those; here, only the runs still open wait for their comments
    live = {run_id: run for run_id, run in state.runs.items() if not run.ended}
    delivered = {run_id: run.delivered for run_id, run in live.items()}
    return not checks.undelivered_comments(
        [(p.run_id, p.comment_id) for p in chaos.comments.posted if p.run_id in live],
        live, delivered)


def cleanup(settings: Settings) -> None:
    compute = LocalCompute(settings.home / "jobs")
    for row in compute.queue():
        compute.cancel(row.job_id)


def parse_faults(raw: str) -> set[str]:
    chosen = {f.strip() for f in raw.split(",") if f.strip()} - {"none"}
    unknown = chosen - set(faults.FAULTS)
    if unknown:
        raise SystemExit(f"chaos: unknown fault {', '.join(sorted(unknown))}; valid: "
                         f"{', '.join(faults.FAULTS)}, or none")
    return chosen


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
    parser.add_argument("--faults", default=",".join(faults.FAULTS),
                        help=f"faults to inject beside the kills, comma-separated, from "
                             f"{', '.join(faults.FAULTS)} (default: all), or none")
    parser.add_argument("--window-chance", type=float, default=faults.WINDOW_CHANCE,
                        help="per loop turn, the chance a git or disk fault opens a new "
                             "window while kills last")
    parser.add_argument("--comments", type=int, default=None,
                        help=f"reviewer comments to post while ticks run (default "
                             f"{faults.COMMENTS_PER_RUN} per run)")
    parser.add_argument("--keep", action="store_true", help="keep the home for inspection")
    args = parser.parse_args(argv)
    chosen = parse_faults(args.faults)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="outerloop-chaos-"))
    kinds = [KINDS[i % len(KINDS)] for i in range(args.runs)]
    rng.shuffle(kinds)
    settings = build_home(root, CONTRACT_ACTIVE)
    chaos_slots(settings, args.in_flight)
    chaos = Chaos(settings, rng, args.kills, args.tick_kill_share, in_flight=args.in_flight)
    if "git" in chosen:
        chaos.git = faults.GitFault(root, settings.home / "forge")
        chaos.env = chaos.git.env(chaos.env)
    if "disk" in chosen:
        chaos.disk = faults.DiskFault(settings.home / "runs")
        why = chaos.disk.mount()
        if why:
            print(f"  disk fault off: {why}", flush=True)
            chaos.disk = None
    chaos.submit = "submit" in chosen
    if "publish" in chosen:
        chaos.publish = faults.PublishFault(settings.home / "forge")
    if "moves" in chosen:
        chaos.moves = faults.Moves(settings.home / "forge", TARGET, MAINTAINER)
    if "restore" in chosen:
        chaos.restore = faults.RestoreFault(root, settings.home)
        chaos.restore.configure(settings.home / "outerloop.toml")
        settings = load_settings(settings.home)
        chaos.settings = settings
    chaos.window_chance = args.window_chance
    if "comments" in chosen:
        budget = faults.COMMENTS_PER_RUN * args.runs if args.comments is None else args.comments
        chaos.comments = faults.Comments(settings.home / "forge", settings.forge.login, TARGET,
                                         MAINTAINER, budget)
    local = forge(settings)
    for index, kind in enumerate(kinds, start=1):
        issue = local.open_issue_as(TARGET, f"Idea {index} for {kind}",
                                    f"Try one more idea on the {kind} benchmark.", MAINTAINER)
        chaos.kinds[issue.number] = kind
    print(f"chaos home {root} (seed {args.seed}): issues {dict(chaos.kinds)}; faults "
          f"{', '.join(sorted(chosen)) or 'none'}", flush=True)
    deadline = time.monotonic() + (args.timeout_s or 300 + 120 * args.runs)
    started = time.monotonic()
    targets: list[tuple[str, int, str]] = []
    last_quiet: tuple[int, bool] = (0, False)
    quiet_ticks = 0
    try:
        while True:
            chaos.tick(targets)
            state = rebuild(settings.home, save_cache=False)
            if chaos.faults_turn(state):
                state = rebuild(settings.home, save_cache=False)
            now_quiet = quiet(chaos, state)
            quiet_ticks = quiet_ticks + 1 if now_quiet[1] and now_quiet == last_quiet else 0
            last_quiet = now_quiet
            if not chaos.windows_open and (
                    all_finished(chaos, state) or time.monotonic() > deadline
                    or quiet_ticks >= QUIET_TICKS):
                if quiet_ticks >= QUIET_TICKS and not all_finished(chaos, state):
                    print(f"  stopped waiting: {QUIET_TICKS} ticks with every issue settled "
                          f"or stuck in review, no job live and no new run", flush=True)
                break
            if time.monotonic() > deadline + 60:
                if chaos.restore is not None and chaos.restore.pending:
                    print("  a backup was never put back: the ledger never caught up with "
                          "its remote with no writer live", flush=True)
                break
            targets = chaos.maintain(state)
            chaos.maybe_kill_job(state)
        chaos.close_faults()
        for _ in range(3):  # settle: anything the last ticks started is recorded
            chaos.tick_s = 1e9
            chaos.kill_budget = 0
            chaos.tick()
        state = rebuild(settings.home, save_cache=False)
        out = checks.check(
            settings.home, forge(settings), TARGET, chaos.kinds,
            [(p.run_id, p.comment_id) for p in chaos.comments.posted] if chaos.comments else None,
            state)
    finally:
        chaos.close_faults()
        cleanup(settings)
        if chaos.disk is not None:
            time.sleep(1.0)  # the cancelled jobs' processes leave the tmpfs
            chaos.disk.unmount()
    for line in out.lost:
        print(f"  lost: {line}")
    lines, missing = checks.stage_lines(chaos.kinds, out)
    for line in lines:
        print(line)
    print(faults.summary(chaos.git, chaos.disk, chaos.kills['submit'] if chaos.submit else None,
                         chaos.comments, chaos.publish, out.refusals, chaos.moves,
                         chaos.restore))
    for line in missing:
        print(f"  stage not reached: {line}")
    print(f"  {chaos.ticks} ticks in {time.monotonic() - started:.0f} s; kills: "
          f"{dict(chaos.kills)}", flush=True)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"chaos: {args.runs} runs, {chaos.spent} kills, {out.duplicates} duplicates, "
          f"{len(out.lost)} lost, {out.stuck} stuck, {out.ended} ended, {out.parked} parked",
          flush=True)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
