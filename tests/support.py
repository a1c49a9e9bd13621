"""Builders for real homes: a local forge holding the example target, real ticks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from outerloop.config import Settings, load_settings
from outerloop.forge.local import LocalForge
from outerloop.home import init_home
from outerloop.kernel.tick import run_tick
from outerloop.ledger.book import rebuild
from outerloop.ledger.state import State

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_TARGET = REPO_ROOT / "examples" / "tinytsp"
TINYCLF = REPO_ROOT / "examples" / "tinyclf"
"""The second example target: its test labels are eval-only (imported as ``TARGET``)."""
AGENTS = REPO_ROOT / "examples" / "agents"
TARGET = "demo/tinytsp"


IN_PROCESS_COMMANDS = {
    bench: (f"    command: python produce.py --bench {bench}", f"    outputs: out/{bench}.json",
            f"    score: python score.py --bench {bench} --json",
            f"    command: python evaluate.py --bench {bench} --json")
    for bench in ("tour", "spread")
}


def in_process_target(dest: Path) -> Path:
    """A copy of the example target at ``dest`` whose benchmarks are **in-process**
    (``python evaluate.py --bench X --json`` prints the metric, no scorer): the shape
    tests that edit what the evaluated process prints need (examples/tinytsp itself is
    scorer first)."""
    import shutil

    shutil.copytree(EXAMPLE_TARGET, dest)
    contract = dest / ".outerloop.yaml"
    lines = contract.read_text().splitlines()
    kept = []
    for line in lines:
        bare = line.split("#", 1)[0].rstrip()
        for produce, outputs, score, in_process in IN_PROCESS_COMMANDS.values():
            if bare == produce:
                line = in_process
            elif bare in (outputs, score):
                line = ""
        if line:
            kept.append(line)
    contract.write_text("\n".join(kept) + "\n")
    return dest


def target_with_slots(tmp_path: Path, slots: int) -> Path:
    """A copy of the example target with ``slots`` agent slots (``max_active_attempts``),
    so that many runs go at once."""
    import shutil

    target = tmp_path / "tinytsp"
    shutil.copytree(EXAMPLE_TARGET, target, ignore=shutil.ignore_patterns("__pycache__"))
    contract = target / ".outerloop.yaml"
    text = contract.read_text()
    assert "max_active_attempts: 1" in text
    contract.write_text(text.replace("max_active_attempts: 1", f"max_active_attempts: {slots}"))
    return target


def unchained(line: bytes) -> bytes:
    """A ledger line as a version before the hash chain wrote it (no ``prev``)."""
    from outerloop.ledger import chain

    prev = chain.prev_of(line)
    return line if prev is None else line[: -len(f',"prev":"{prev}"}}')] + b"}"


GATE_CONFIDENCE: float | None = None
"""The gate's confidence ``make_home`` writes into the target's benchmarks that state
none; None keeps the contract's own (0.99 by default). ``tests/e2e`` sets
``QUICK_CONFIDENCE`` for its runs (``tests/e2e/conftest.py``)."""

QUICK_CONFIDENCE = 0.9
"""For runs whose subject is not the gate's statistics (review, publish, revise, ...):
the example's gains (about 1 in 7.6, noise sd 0.1 to 0.2) are credited at the first look
(3 couples: t 10 to 13 against about 6), where at the example's 0.99 they need the second
(critical 20 at 3 couples): 6 more pair jobs a run. The gate's own tests, and those of
text that states the confidence, name theirs."""


def with_confidence(target_dir: Path, dest: Path, confidence: float) -> Path:
    """A copy of ``target_dir`` at ``dest`` whose benchmarks that state no confidence
    state ``confidence``."""
    import shutil

    shutil.copytree(target_dir, dest, ignore=shutil.ignore_patterns("__pycache__"))
    contract = dest / ".outerloop.yaml"
    lines = contract.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("- name:")]
    for start in reversed(starts):
        indent = " " * (len(lines[start]) - len(lines[start].lstrip()) + 2)
        end = next((i for i in range(start + 1, len(lines))
                    if not lines[i].startswith(indent)), len(lines))
        if not any(line.lstrip().startswith("confidence:") for line in lines[start:end]):
            lines.insert(end, f"{indent}confidence: {confidence}")
    contract.write_text("\n".join(lines) + "\n")
    return dest


LOCAL_START = "fork"
"""How local jobs start in the homes tests make: forked from a warm interpreter, which
behaves as a fresh one does (the compute contract suite and ``test_local_fork`` hold
both to it) at a fraction of the CPU a job's two interpreter starts cost."""


def starting_jobs(config_text: str, local_start: str = LOCAL_START) -> str:
    """``outerloop.toml``'s text with its local jobs started by ``local_start`` (a
    home on other compute is left as it is)."""
    if local_start == "exec":
        return config_text
    return config_text.replace('[compute]\nkind = "local"\n',
                               f'[compute]\nkind = "local"\nlocal_start = "{local_start}"\n',
                               1)


def make_home(tmp_path: Path, script: str | Path = "tinytsp-2opt.yaml", *,
              compute: str = "local", extra_toml: str = "",
              target_dir: Path = EXAMPLE_TARGET,
              judge: str | Path | None = "judge-approve.yaml",
              confidence: float | None = None, local_start: str = LOCAL_START) -> Settings:
    """A home with the example target imported into the local forge, a scripted agent
    and a scripted judge (``judge=None``: the one ``outerloop init`` writes for a
    scripted home). Grace is 0 so the sweep acts at once in tests. ``confidence``
    (else ``GATE_CONFIDENCE``) is written into benchmarks that state none. Local jobs
    start by fork (``LOCAL_START``) unless ``local_start="exec"``."""
    home = tmp_path / "home"
    script_path = Path(script) if Path(script).is_absolute() else AGENTS / script
    judge_path = None if judge is None else (
        Path(judge) if Path(judge).is_absolute() else AGENTS / judge)
    init_home(home, forge="local", compute=compute, harness="scripted", targets=[TARGET],
              script=str(script_path), judge_script=str(judge_path) if judge_path else None)
    config = home / "outerloop.toml"
    text = config.read_text().replace("max_new_runs_per_tick = 1",
                                      "max_new_runs_per_tick = 1\ngrace_minutes = 0")
    config.write_text(starting_jobs(text, local_start) + "\n" + extra_toml)
    settings = load_settings(home)
    confidence = GATE_CONFIDENCE if confidence is None else confidence
    if confidence is not None:
        import tempfile

        copy_dir = Path(tempfile.mkdtemp(prefix="target-as-imported-", dir=tmp_path))
        target_dir = with_confidence(target_dir, copy_dir / target_dir.name, confidence)
    forge(settings).import_repo(target_dir, TARGET)
    return settings


def jobs_import_this_checkout(settings: Settings) -> Settings:
    """With ``PYTHONPATH`` set (a worktree under test), jobs get it too (``pass_env``),
    so the kernel code they run is this checkout's, not an installed copy's."""
    if not os.environ.get("PYTHONPATH"):
        return settings
    config = settings.home / "outerloop.toml"
    text = config.read_text().replace("[compute]\n", "[compute]\npass_env = [\"PYTHONPATH\"]\n", 1)
    config.write_text(text)
    return load_settings(settings.home)


def forge(settings: Settings) -> LocalForge:
    return LocalForge(settings.home / "forge", settings.forge.login)


def open_issue(settings: Settings, title: str, body: str, as_user: str = "maintainer") -> int:
    return forge(settings).open_issue_as(TARGET, title, body, as_user).number


def state_of(settings: Settings) -> State:
    return rebuild(settings.home, save_cache=False)


def tick_until(settings: Settings, done: Callable[[State], bool], *, timeout_s: float = 120,
               subprocess_ticks: bool = False, env: dict[str, str] | None = None,
               pause_s: float = 0.3) -> State:
    """Tick (in-process, or as real `outerloop tick` processes) until ``done(state)``.

    After a tick that recorded something the next comes after ``pause_s``. After one
    that recorded nothing, the next comes as soon as something a tick would read moves
    (a ledger line a job appended, a local job's record: ``_activity``), or when the
    pause, growing x1.5 up to ``IDLE_PAUSE_MAX_S``, is over (what only time moves).
    A run waiting on its jobs is not ticked three times a second, which took about a
    third of the suite's CPU from the jobs it waited on (four workers on two cores),
    and its next step is taken within ``ACTIVITY_POLL_S`` of a job's end."""
    deadline = time.monotonic() + timeout_s
    pause = pause_s
    while True:
        before = _activity(settings)
        if subprocess_ticks:
            tick_process(settings, env)
        else:
            run_tick(settings)
        state = state_of(settings)
        if done(state):
            return state
        if time.monotonic() > deadline:
            runs = {r.run_id: (r.state, r.park_reason, r.ending) for r in state.runs.values()}
            raise AssertionError(f"timed out waiting; runs: {runs}{_why(settings, state)}")
        if _ledger_bytes(settings) != before[0]:
            pause = pause_s
            time.sleep(pause)
            continue
        pause = min(pause * 1.5, max(pause_s, IDLE_PAUSE_MAX_S))
        _await_activity(settings, before, pause)


IDLE_PAUSE_MAX_S = 2.0
"""The longest pause ``tick_until`` makes between ticks while nothing moves."""
ACTIVITY_POLL_S = 0.1
"""How often a pause looks for a change a tick would read."""


def _await_activity(settings: Settings, since: tuple[object, ...], longest_s: float) -> None:
    """Return when something a tick reads differs from ``since`` (taken before the tick:
    a job that ended while it ran wakes the next one), looked at every
    ``ACTIVITY_POLL_S``, or after ``longest_s``."""
    end = time.monotonic() + longest_s
    while time.monotonic() < end:
        time.sleep(min(ACTIVITY_POLL_S, max(0.0, end - time.monotonic())))
        if _activity(settings) != since:
            return


def _activity(settings: Settings) -> tuple[int, tuple[tuple[str, int], ...]]:
    """What moves when a tick has something new to read: the ledger's lines (a job
    appends its run's), and each local job's record (written as it starts and ends)."""
    jobs = settings.home / "jobs"
    records = tuple(sorted((p.parent.name, _stat(p)[1])
                           for p in jobs.glob("*/state.json"))) if jobs.is_dir() else ()
    return _ledger_bytes(settings), records


def _stat(path: Path) -> tuple[int, int]:
    """``(size, mtime_ns)``, or zeros for a file gone since it was listed."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return 0, 0
    return stat.st_size, stat.st_mtime_ns


def _ledger_bytes(settings: Settings) -> int:
    """The size of the home's ledger lines but ``heads.jsonl`` (written every tick): it
    grows exactly when a tick recorded something."""
    ledger = settings.home / "ledger"
    targets = [d for d in ledger.iterdir() if not d.name.startswith(".")] \
        if ledger.is_dir() else []  # not .git: walking its objects cost ~30 ms a call
    return sum(_stat(p)[0] for d in targets for pattern in ("*.jsonl", "*/*.jsonl")
               for p in d.glob(pattern) if p.name != "heads.jsonl")


def _why(settings: Settings, state: State) -> str:
    """For a timeout's message: why each ended run ended, with its jobs' states and the
    end of their output (what a CI log must show to explain a flake)."""
    lines = []
    for run in state.runs.values():
        if not run.ended:
            continue
        lines.append(f"\n{run.run_id} ended: {run.end_reason or '(no reason kept)'}")
        for job in (state.jobs[j] for j in run.job_ids if j in state.jobs):
            logs = settings.home / "runs" / run.run_id / "jobs" / job.name
            tail = " | ".join(line for log in (logs / "stdout", logs / "stderr")
                              if log.is_file()
                              for line in log.read_text(errors="replace").splitlines()[-6:])
            lines.append(f"\n  job {job.job_id} {job.purpose} {job.state} "
                         f"exit {job.exit_code}: {tail}")
    return "".join(lines)


def tick_process(settings: Settings, env: dict[str, str] | None = None,
                 check: bool = False) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home",
                           str(settings.home)], capture_output=True, text=True, env=full,
                          check=check, timeout=300)


def only_run(state: State) -> object:
    (run,) = state.runs.values()
    return run


def ended(state: State) -> bool:
    return bool(state.runs) and all(r.ended for r in state.runs.values())


def in_review(state: State) -> bool:
    return any(r.state == "parked" and r.park_reason == "review" for r in state.runs.values())


@dataclass(frozen=True)
class SeenSide:
    """One side of an eval pair job as its files show it (``attempt/pairs.py``)."""

    job: str
    bench: str
    role: str
    seed: int
    dir: Path

    @property
    def stdout(self) -> str:
        return (self.dir / "stdout").read_text()


def eval_sides(settings: Settings, state: State, run_id: str) -> list[SeenSide]:
    """Both sides of every eval pair job of ``run_id``, pair jobs in the order they
    were submitted (a submission's later looks after its first), base first in each."""
    from outerloop.attempt import pairs
    from outerloop.run.paths import RunPaths

    paths = RunPaths.of(settings.home, run_id)
    seen = []
    jobs = sorted((j for j in state.jobs.values() if j.run == run_id and j.purpose == "eval"),
                  key=lambda j: j.order)
    for job in jobs:
        plan = pairs.read_plan(paths, job.name)
        assert plan is not None, f"no plan for eval job {job.name}"
        for role in ("base", "cand"):
            slot = pairs.slot_of(plan, role)  # type: ignore[arg-type]
            seen.append(SeenSide(job.name, plan.benchmark, role, plan.seed,
                                 pairs.side_dir(paths, job.name, slot)))
    return seen
