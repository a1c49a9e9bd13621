"""``outerloop demo``: the whole loop on the embedded defaults, in one command.

A throwaway home, the bundled example target imported into the local forge, an
issue opened by a maintainer, a scripted agent (no API key), local compute (no
cluster), and ticks until the run's pull request is open for review.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import outerloop
from outerloop.config import Settings
from outerloop.errors import OuterloopError
from outerloop.ledger.book import rebuild
from outerloop.ledger.state import RunRecord, State

DEMO_TARGET = "demo/tinytsp"
DEMO_AGENT = "tinytsp-2opt.yaml"
DEMO_JUDGE = "judge-approve.yaml"
ISSUE_TITLE = "Shorter tours on the tour benchmark"
ISSUE_BODY = (
    "The `tour` benchmark's solver builds nearest-neighbour tours, which cross "
    "themselves. Hypothesis: a local search that removes crossings (2-opt) makes the "
    "mean tour clearly shorter at little cost."
)
TICK_PAUSE_S = 1.0


def examples_dir() -> Path:
    """The bundled examples: inside the package when installed from a wheel, or the
    repository's ``examples/`` in a checkout."""
    package = Path(outerloop.__file__).resolve().parent
    for candidate in (package / "_examples", package.parent / "examples"):
        if (candidate / "tinytsp" / ".outerloop.yaml").exists():
            return candidate
    raise OuterloopError("the bundled example target is missing; fix: reinstall outerloop "
                         "(pip install -e . from a checkout)")


@dataclass
class DemoResult:
    settings: Settings
    run: RunRecord
    issue: int


def describe(state: State, started: float) -> str:
    """The live status line."""
    elapsed = time.monotonic() - started
    if not state.runs:
        return f"[{elapsed:5.1f}s] waiting for the kernel to claim the issue"
    run = max(state.runs.values(), key=lambda r: r.queued_at)
    live = [j for j in state.live_jobs() if j.run == run.run_id]
    where = run.park_reason or run.state
    what = {"queued": "queued, starting its agent", "jobs": "experiments running",
            "eval": "the gate is measuring base vs candidate", "publish": "credited; publishing",
            "review": "pull request open", "running": "agent session in progress"}.get(
        where, where)
    return (f"[{elapsed:5.1f}s] {run.run_id}: {what}; legs {run.legs}, "
            f"launches {len(run.launches)}, live jobs {len(live)}")


def run_demo(home: Path | None, *, timeout_s: float,
             say: Callable[[str], None]) -> DemoResult:
    """Build the demo home and tick until a PR is open (or the run ends)."""
    from outerloop.config import load_settings
    from outerloop.forge.local import LocalForge
    from outerloop.home import init_home
    from outerloop.kernel.tick import run_tick

    examples = examples_dir()
    root = home or Path(tempfile.mkdtemp(prefix="outerloop-demo-"))
    settings = init_home(root, forge="local", compute="local", harness="scripted",
                         targets=[DEMO_TARGET], script=str(examples / "agents" / DEMO_AGENT),
                         judge_script=str(examples / "agents" / DEMO_JUDGE))
    settings = load_settings(root)
    forge = LocalForge(settings.home / "forge", settings.forge.login)
    forge.import_repo(examples / "tinytsp", DEMO_TARGET)
    issue = forge.open_issue_as(DEMO_TARGET, ISSUE_TITLE, ISSUE_BODY, "maintainer").number
    started = time.monotonic()
    while True:
        run_tick(settings)
        state = rebuild(settings.home, save_cache=False)
        say(describe(state, started))
        runs = list(state.runs.values())
        done = [r for r in runs if r.pr_number is not None or r.ended]
        if done:
            return DemoResult(settings, done[0], issue)
        if time.monotonic() - started > timeout_s:
            raise OuterloopError(f"the demo run did not reach review within {timeout_s:.0f}s; "
                                 f"inspect it with: outerloop status --home {root}")
        time.sleep(TICK_PAUSE_S)
