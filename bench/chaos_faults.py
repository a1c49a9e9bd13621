"""The faults chaos injects beside its kills (issue 22), each a real mechanism:

- ``git``: the forge answers git clone and fetch with HTTP 502s or timeouts while a
  window is open. A ``git`` wrapper first on the ticks' ``PATH`` fails the clones and
  fetches whose arguments name the local forge's repositories (as git over https fails:
  exit 128, curl's words) and runs the real git for everything else.
- ``disk``: the runs' disk is full while a window is open. ``<home>/runs`` (the
  workspaces, the launch trees, what jobs and agent sessions write) is a tmpfs; a
  window shrinks its size to what it holds (``mount -o remount,size=``), so every new
  block fails with ``ENOSPC``; closing it gives the room back. Needs root (a mount):
  without it the fault is off and says so.
- ``submit``: the local equivalent of an ambiguous ``sbatch`` (chaos runs local
  compute only): the submitter dies right after the job exists (its directory appeared)
  and before the answer is recorded, so the kernel must find the job, not submit it
  twice.
- ``comments``: reviewer comments posted while a tick runs (at moments drawn inside the
  tick's expected wall time), on the PRs of runs in review; each must reach the agent.
- ``publish`` (issue 48): the forge refuses the kernel's rights to publish while a
  window is open: lines in the local forge's ``REFUSE`` file (its test hook,
  ``LocalForge._refuse_if_told``) make ``open_pr`` (the push went through, the pull
  request is refused), ``push`` (the PR branch is refused) or both answer 403 "Resource
  not accessible by integration". The run waits on a human; closing the window must let
  it publish by itself (chaos's home tries such steps every ``HUMAN_RETRY_MINUTES``).
- ``moves`` (issue 48): a maintainer pushes a commit of their own (a file under
  ``docs/maintainer/``, which no benchmark reads) onto the branch a credited run is about
  to publish on (its ``publish.branch`` before its first pull request: most often while a
  ``publish`` window holds it; the branch is created when the forge has none) and onto
  the head branch of a pull request in review, once each per run. The kernel never
  overwrites another's commits: the unpublished candidate goes to a fresh branch
  (``<branch>-2``), the PR in review keeps the commit. It also pushes a commit onto a
  research line already on the forge (issue 49 point 6): the run's next hand-over goes
  to a fresh line branch (``agents/<agent>-2``), the person's commit stays.
- ``restore`` (issue 48): the home has a ``ledger_remote`` (a local bare repository),
  and at drawn moments a backup of what a separate ledger volume would hold (``ledger/``
  and ``cache/``) is taken and, some ticks later, put back in place (every file a new
  inode, as a restore writes it); the next tick must take the lost lines back from the
  remote and repeat nothing. Not ``jobs/`` or ``runs/``: restoring those under live
  processes is no restore local compute could meet. Both are done between ticks; the
  restore only while no job that writes the ledger is live (legs append to their run's
  file; experiments and eval pairs do not) and once the remote holds all the ledger
  holds (a clean tree, pushed): what a ledger remote promises to give back. Lines no
  remote ever received are what a restore cannot give back (docs/operate.md), not what
  this measures.

A git, disk or publish window opens (a backup is taken, a branch is moved) only while
the kill budget lasts, so the runs settle afterwards; comments are posted until their
own budget (``--comments``) is spent. A backup taken is always put back.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.forge.local import REFUSE_FILE, LocalForge

FAULTS = ("git", "disk", "submit", "comments", "publish", "moves", "restore")
GIT_FIRST_WINDOW_S = 25.0
"""The first forge outage: 25 s of failed clones and fetches (issue 22 lost an issue to
exactly this)."""
GIT_WINDOW_S = (5.0, 25.0)
GIT_TIMEOUT_HANG_S = 3.0
"""A timed-out clone hangs this long before git gives up (curl's own timeout)."""
DISK_WINDOW_S = (3.0, 12.0)
DISK_SIZE = "1g"
WINDOW_CHANCE = 0.03
"""Per loop turn, the chance a closed fault opens a new window (while kills last): about
a quarter of the turns see the forge down, a seventh the disk full."""
SUBMIT_SHARE = 0.25
"""Of the ticks, this share is watched for a new job and killed as it appears."""
SUBMIT_POLL_S = 0.003
COMMENT_BURST = (1, 3)
BURST_CHANCE = 0.8
"""Per tick with a PR in review, the chance comments are posted while it runs."""
COMMENTS_PER_RUN = 8
PUBLISH_WINDOW_S = (8.0, 30.0)
PUBLISH_FIRST_MAX_S = 150.0
"""The first publish window opens when a run that publishes waits for its gate and
lasts until a publish step was refused (at least its drawn length, at most this)."""
PUBLISH_MODES = {"open_pr": ("open_pr *",), "push": ("push *",),
                 "both": ("open_pr *", "push *")}
HUMAN_RETRY_MINUTES = 0.05
"""Chaos's ``[limits] human_retry_minutes``: a step refused for rights is tried again
3 s later, so a closed window lets runs publish within a tick or two (10 min by
default)."""
MOVE_CHANCE = 0.5
"""Per loop turn with a branch to move, the chance the maintainer moves one."""
RESTORE_CHANCE = 0.08
"""Per loop turn, the chance a backup of the ledger is taken (one at a time)."""
RESTORE_AFTER_TICKS = (2, 12)
"""Ticks between a backup and its restore (longer when the moment is not right)."""

GIT_WRAPPER = r"""#!/bin/sh
# chaos: the forge fails git clone/fetch while @FLAG@ exists (see bench/chaos_faults.py)
if [ -e "@FLAG@" ]; then
  sub=""; skip=0; forge=0
  for a in "$@"; do
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$a" in
      -c|-C) skip=1; continue ;;
      "@FORGE@"/*) forge=1 ;;
    esac
    case "$a" in -*) ;; *) [ -z "$sub" ] && sub="$a" ;; esac
  done
  if [ "$forge" = 1 ] && { [ "$sub" = clone ] || [ "$sub" = fetch ]; }; then
    mode=$(cat "@FLAG@" 2>/dev/null)
    echo "$sub $mode" >> "@LOG@"
    if [ "$mode" = timeout ]; then
      sleep @HANG@
      echo "fatal: unable to access 'https://forge.local/chaos/target.git/':" \
        "Operation timed out after @HANG_MS@ milliseconds with 0 bytes received" >&2
      exit 128
    fi
    echo "error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502" >&2
    echo "fatal: expected flush after ref listing" >&2
    exit 128
  fi
fi
exec "@GIT@" "$@"
"""


@dataclass
class Window:
    """One fault's windows: when the open one closes, how many and how long in all."""

    until: float | None = None
    opened_at: float = 0.0
    count: int = 0
    seconds: float = 0.0

    @property
    def is_open(self) -> bool:
        return self.until is not None

    def open(self, length_s: float) -> None:
        now = time.monotonic()
        self.until, self.opened_at = now + length_s, now
        self.count += 1

    def due(self) -> bool:
        return self.until is not None and time.monotonic() >= self.until

    def overdue(self, max_s: float) -> bool:
        """Open for longer than ``max_s``."""
        return self.until is not None and time.monotonic() - self.opened_at >= max_s

    def close(self) -> None:
        if self.until is not None:
            self.seconds += time.monotonic() - self.opened_at
        self.until = None


class GitFault:
    """Forge 5xx and timeouts on clone and fetch, through a ``git`` wrapper."""

    def __init__(self, root: Path, forge_dir: Path) -> None:
        real = shutil.which("git")
        if real is None:
            raise SystemExit("chaos: git is not on PATH; fix: install git")
        self.bin = root / "fault-bin"
        self.bin.mkdir()
        self.flag = root / "faults" / "git"
        self.log = root / "faults" / "git.log"
        self.flag.parent.mkdir(exist_ok=True)
        wrapper = self.bin / "git"
        text = GIT_WRAPPER
        for key, value in (("@FLAG@", self.flag), ("@FORGE@", forge_dir.resolve()),
                           ("@LOG@", self.log), ("@GIT@", real),
                           ("@HANG_MS@", int(GIT_TIMEOUT_HANG_S * 1000)),
                           ("@HANG@", GIT_TIMEOUT_HANG_S)):
            text = text.replace(key, str(value))
        wrapper.write_text(text)
        wrapper.chmod(0o755)
        self.window = Window()
        self.modes: dict[str, int] = {"502": 0, "timeout": 0}

    def env(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, "PATH": f"{self.bin}{os.pathsep}{env.get('PATH', '')}"}

    def open(self, length_s: float, mode: str) -> None:
        self.flag.write_text(mode + "\n")
        self.modes[mode] += 1
        self.window.open(length_s)

    def close(self) -> None:
        self.flag.unlink(missing_ok=True)
        self.window.close()

    @property
    def hits(self) -> int:
        """Clones and fetches the wrapper failed."""
        try:
            return len(self.log.read_text().splitlines())
        except FileNotFoundError:
            return 0


class DiskFault:
    """A full disk under ``<home>/runs``: a tmpfs shrunk to what it holds."""

    def __init__(self, runs: Path) -> None:
        self.runs = runs
        self.window = Window()
        self.mounted = False
        self.refused = 0
        """Shrinks that raced a growing tmpfs and gave up (the window stayed shut)."""

    def mount(self) -> str | None:
        """Mount the tmpfs; None, or why the fault is off."""
        self.runs.mkdir(parents=True, exist_ok=True)
        if any(self.runs.iterdir()):
            return f"{self.runs} is not empty"
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE},mode=0700",
                               "chaos-runs", str(self.runs)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"cannot mount a tmpfs ({done.stderr.strip() or 'mount failed'}; needs root)"
        self.mounted = True
        return None

    def _remount(self, size: str) -> bool:
        return subprocess.run(["mount", "-o", f"remount,size={size}", str(self.runs)],
                              capture_output=True, check=False).returncode == 0

    def open(self, length_s: float) -> None:
        """Shrink the tmpfs to its use (retried: a job may be writing right now)."""
        for _ in range(20):
            st = os.statvfs(self.runs)
            used = (st.f_blocks - st.f_bfree) * st.f_frsize
            if self._remount(str(max(used, st.f_frsize))):
                self.window.open(length_s)
                return
        self.refused += 1

    def close(self) -> None:
        if self.window.is_open:
            self._remount(DISK_SIZE)
        self.window.close()

    def unmount(self) -> None:
        self.close()
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.runs)], capture_output=True, check=False)
            self.mounted = False


@dataclass
class Posted:
    run_id: str
    pr: int
    comment_id: int
    during_tick: bool


@dataclass
class Comments:
    """Reviewer comments posted from a thread while a tick runs."""

    forge_dir: Path
    login: str
    repo: str
    author: str
    budget: int
    posted: list[Posted] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _thread: threading.Thread | None = None
    tick_running: threading.Event = field(default_factory=threading.Event)

    @property
    def left(self) -> int:
        return self.budget - len(self.posted)

    def burst(self, rng: random.Random, targets: list[tuple[str, int, str]],
              within_s: float) -> None:
        """Post comments on ``targets`` (run id, PR, text) at moments drawn within
        ``within_s`` from now, from a thread (joined by ``join``)."""
        plan = sorted((rng.uniform(0.0, within_s), run_id, pr, text)
                      for run_id, pr, text in targets)
        self._thread = threading.Thread(target=self._post, args=(plan,), daemon=True)
        self._thread.start()

    def _post(self, plan: list[tuple[float, str, int, str]]) -> None:
        started = time.monotonic()
        local = LocalForge(self.forge_dir, self.login)
        for at, run_id, pr, text in plan:
            time.sleep(max(0.0, started + at - time.monotonic()))
            try:
                comment = local.comment_as(self.repo, pr, text, self.author)
            except Exception as exc:  # counted, shown in the summary
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            self.posted.append(Posted(run_id, pr, comment.id, self.tick_running.is_set()))

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def submit_watch(jobs_dir: Path) -> set[str]:
    """The job ids that exist now (a new one appearing means a submit is under way)."""
    with contextlib.suppress(FileNotFoundError):
        return {p for p in os.listdir(jobs_dir) if p.isdigit()}
    return set()


def summary(git: GitFault | None, disk: DiskFault | None, submit_kills: int | None,
            comments: Comments | None, publish: PublishFault | None = None,
            refusals: int = 0, moves: Moves | None = None,
            restore: RestoreFault | None = None) -> str:
    """One line: what each fault injected (``refusals``: the kernel's publish steps the
    forge refused for rights, from the ledger)."""
    parts = []
    if git is not None:
        w = git.window
        parts.append(f"git {w.count} windows ({w.seconds:.0f} s; {git.modes}), "
                     f"{git.hits} clones/fetches failed")
    if disk is not None:
        w = disk.window
        parts.append(f"disk {w.count} windows full ({w.seconds:.0f} s)"
                     + (f", {disk.refused} shrinks gave up" if disk.refused else ""))
    if submit_kills is not None:
        parts.append(f"submit {submit_kills} submitters killed as their job appeared")
    if comments is not None:
        posted = comments.posted
        parts.append(f"comments {len(posted)} posted ({sum(p.during_tick for p in posted)} "
                     f"while a tick ran)" + (f", {len(comments.errors)} failed to post"
                                             if comments.errors else ""))
    if publish is not None:
        w = publish.window
        parts.append(f"publish {w.count} windows refused ({w.seconds:.0f} s; "
                     f"{publish.modes}), {refusals} publish steps refused")
    if moves is not None:
        parts.append(f"moves {moves.count('unpublished')} unpublished branches and "
                     f"{moves.count('review')} PR branches and {moves.count('line')} "
                     f"research lines moved"
                     + (f", {len(moves.errors)} failed" if moves.errors else ""))
    if restore is not None:
        parts.append(f"restore {restore.taken} backups, {restore.restored} put back "
                     f"({restore.postponed} turns waited for the remote or a writer)")
    return "  faults: " + ("; ".join(parts) if parts else "none")


class PublishFault:
    """The forge refuses the kernel's rights to publish (403), through its ``REFUSE``
    test hook."""

    def __init__(self, forge_dir: Path) -> None:
        self.refuse = forge_dir / REFUSE_FILE
        self.window = Window()
        self.modes: dict[str, int] = dict.fromkeys(PUBLISH_MODES, 0)

    def open(self, length_s: float, mode: str) -> None:
        tmp = self.refuse.with_suffix(".tmp")
        tmp.write_text("".join(f"{line}\n" for line in PUBLISH_MODES[mode]))
        os.replace(tmp, self.refuse)  # whole or nothing: a tick may be reading it
        self.modes[mode] += 1
        self.window.open(length_s)

    def close(self) -> None:
        self.refuse.unlink(missing_ok=True)
        self.window.close()


@dataclass
class Moves:
    """A maintainer's commits on the branches the kernel publishes on."""

    forge_dir: Path
    repo: str
    author: str
    moved: dict[str, set[str]] = field(default_factory=dict)
    """Run id -> what of it was moved (``unpublished``, ``review``, ``line``)."""
    errors: list[str] = field(default_factory=list)

    def done(self, run_id: str, what: str) -> bool:
        return what in self.moved.get(run_id, set())

    def move(self, run_id: str, what: str, branch: str) -> None:
        """One commit by the maintainer on ``branch`` of the forge (created when missing);
        once per run and ``what``."""
        local = LocalForge(self.forge_dir, self.author)
        self.moved.setdefault(run_id, set()).add(what)
        try:
            local.commit_files(self.repo, branch, {
                f"docs/maintainer/{branch.replace('/', '-')}.md":
                    f"A fix-up by the maintainer on {branch}.\n".encode()},
                "maintainer fix-up", local.branch_head(self.repo, branch))
        except Exception as exc:  # a race with the kernel's own push: counted, shown
            self.errors.append(f"{type(exc).__name__}: {exc}"[:200])

    def count(self, what: str) -> int:
        return sum(what in kinds for kinds in self.moved.values())


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=False)


class RestoreFault:
    """A ledger volume restored from a backup, with a ledger remote to catch up from."""

    VOLUME = ("ledger", "cache")

    def __init__(self, root: Path, home: Path) -> None:
        self.home = home
        self.remote = root / "ledger-remote.git"
        self.backup = root / "ledger-backup"
        _git("init", "--bare", "--quiet", str(self.remote))
        self.due_tick: int | None = None
        self.taken = 0
        self.restored = 0
        self.postponed = 0

    def configure(self, config: Path) -> None:
        """The home's ``ledger_remote`` (each tick pushes to it, fetches it first)."""
        config.write_text(f'ledger_remote = "{self.remote}"\n' + config.read_text())

    @property
    def pending(self) -> bool:
        return self.due_tick is not None

    def take(self, tick: int, rng: random.Random) -> None:
        shutil.rmtree(self.backup, ignore_errors=True)
        self.backup.mkdir()
        for name in self.VOLUME:
            if (self.home / name).exists():
                shutil.copytree(self.home / name, self.backup / name, symlinks=True)
        self.taken += 1
        self.due_tick = tick + rng.randint(*RESTORE_AFTER_TICKS)

    def pushed(self) -> bool:
        """The remote holds all the ledger holds: a clean tree, its HEAD pushed."""
        ledger = self.home / "ledger"
        status = _git("status", "--porcelain", "--untracked-files=all", cwd=ledger)
        head = _git("rev-parse", "HEAD", cwd=ledger).stdout.strip()
        theirs = _git("--git-dir", str(self.remote), "rev-parse", "refs/heads/main").stdout
        return status.returncode == 0 and not status.stdout.strip() and bool(head) \
            and head == theirs.strip()

    def put_back(self) -> None:
        """The backup in place of the volume: every file a new inode."""
        for name in self.VOLUME:
            shutil.rmtree(self.home / name, ignore_errors=True)
            if (self.backup / name).exists():
                shutil.copytree(self.backup / name, self.home / name, symlinks=True)
        self.restored += 1
        self.due_tick = None
