"""`outerloop demo`, as a new user runs it: one command, a PR at the end; then, merged
and ticked until its report is on the research log, the run's ledger stays small
(issue 27): at most ``RUN_LEDGER_MAX_BYTES`` of ledger lines, and every text it records
by reference (a job's spec, the PR body, the report and the lines they quote) still
reaches the forge whole. One demo run serves both (``demo``): what the first test reads
is taken before the second merges the PR."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from outerloop.forge.local import LocalForge
from outerloop.ledger.book import rebuild
from tests.e2e.explain_check import check_every_run, explained

pytestmark = pytest.mark.e2e

TARGET = "demo/tinytsp"
MAX_TICKS = 8
RUN_LEDGER_MAX_BYTES = 22_500
"""What one real run may add to its target's ledger, its research-log records included
and ``heads.jsonl`` (written per tick, not per run) left out: issue 27's budget (20 KB),
so a 100,000-run history stays about 2 GB, plus 2 KB for order-balanced couples (issue
47: the first look's three seeds run six pair jobs, not three; 21.1 KB measured). The
demo run (one look of the gate) wrote 35-38 KB before the slimming (whole job specs in
every submit, the PR body and the report twice, every default field), 18.0-18.6 KB
after it (three or four records), about 1 KB more when the review adds an advisory
finding. Issue 50's steering reads the issue thread: one cursor record per run on the
local forge (229 B; two, the second settling a whole-second stamp, on GitHub). Measured
21.5 KB alone (three runs, 21,520-21,554 B); 22.47 KB once under the full suite's load
while the local forge still wrote the settling record too, so 22.5 KB."""
LOOK_MAX_BYTES = 7_000
"""What each further look of the gate's sequential test may add (the demo's seeds
sometimes ask for one: three more couples, their six pair jobs, a park and the look;
3.6 KB when it was three pair jobs, so about 6.5 KB now: scaled, not yet measured)."""


def _outerloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", *args], capture_output=True,
                          text=True, timeout=300, check=False)


@dataclass(frozen=True)
class DemoRun:
    """A home `outerloop demo` built from scratch, and what it showed as it ended."""

    home: Path
    done: subprocess.CompletedProcess[str]
    pr_body: str
    decisions: list[str]
    leaderboard: list[dict[str, Any]]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    """One demo run for the module. With ``PYTHONPATH`` set (a worktree under test),
    its jobs get it too, so they run this checkout's kernel
    (``tests/support.jobs_import_this_checkout``)."""
    home = tmp_path_factory.mktemp("demo") / "demo-home"
    with pytest.MonkeyPatch.context() as env:
        if os.environ.get("PYTHONPATH"):
            env.setenv("OUTERLOOP_COMPUTE_PASS_ENV", "PYTHONPATH")
        done = _outerloop("demo", "--home", str(home))
        assert done.returncode == 0, done.stderr
        prs = LocalForge(home / "forge", "outerloop").list_prs(TARGET, "open")
        assert len(prs) == 1, prs
        decisions = [d["decision"] for d in explained(home, check_every_run(home)[0])]
        shown = _outerloop("status", "--json", "--home", str(home))
        assert shown.returncode == 0, shown.stderr
        yield DemoRun(home, done, prs[0].body, decisions,
                      json.loads(shown.stdout)["leaderboard"])


def test_demo_ends_with_open_pr_carrying_measurements_when_run_from_scratch(
        demo: DemoRun) -> None:
    assert "Pull request #" in demo.done.stdout
    assert "outerloop forge pr merge" in demo.done.stdout
    for needle in ("- baseline:", "- candidate:", "- pairs: ", "## Experiments",
                   "## Report", "Closes #1."):
        assert needle in demo.pr_body
    # 3 couples, or 6 when the run's small share of the target's budget needs a second look
    assert re.search(r"- pairs: (3|6) couples", demo.pr_body), demo.pr_body
    decisions = demo.decisions
    assert decisions[:2] == ["claimed", "post-claim"] and "admitted" in decisions
    assert decisions.index("verdict") < decisions.index("publish-ready") < \
        decisions.index("pr-ready")
    # the leaderboard: the demo's one slot, its one run and the PR it carried credited
    (row,) = demo.leaderboard
    assert (row["target"], row["slot"], row["harness"]) == ("demo/tinytsp", 1, "scripted")
    assert (row["runs"], row["credited_prs"], row["merged_prs"]) == (1, 1, 0), row
    assert row["money_usd_per_credited_pr"] == row["money_usd"]
    assert row["gpu_hours_per_credited_pr"] == row["gpu_hours"]


def _ledger_files(home: Path) -> list[Path]:
    folder = home / "ledger" / TARGET.replace("/", "__")
    return [p for p in folder.rglob("*.jsonl") if p.name != "heads.jsonl"]


def _ledger_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in _ledger_files(home))


def _bytes_per_kind(home: Path) -> dict[str, int]:
    """Where the bytes went, for the message of a run over its budget."""
    sizes: dict[str, int] = {}
    for path in _ledger_files(home):
        for line in path.read_text().splitlines(keepends=True):
            kind = json.loads(line)["kind"]
            sizes[kind] = sizes.get(kind, 0) + len(line.encode())
    return dict(sorted(sizes.items(), key=lambda item: -item[1]))


def test_a_real_run_writes_at_most_its_ledger_budget_and_its_texts_reach_the_forge_whole(
        demo: DemoRun) -> None:
    home = demo.home
    forge = LocalForge(home / "forge", "outerloop")
    (pr,) = forge.list_prs(TARGET, "open")
    merged = _outerloop("forge", "pr", "merge", str(pr.number), "--home", str(home))
    assert merged.returncode == 0, merged.stderr
    for _ in range(MAX_TICKS):
        assert _outerloop("tick", "--home", str(home)).returncode == 0
        (run,) = rebuild(home, use_cache=False, save_cache=False).runs.values()
        if run.ended and run.report_posted and run.recorded:
            break
    assert run.ending == "merged" and run.report_posted and run.recorded
    assert run.seat == "scripted"  # the seat it was claimed in (the leaderboard's row)
    own = home / "ledger" / TARGET.replace("/", "__") / "runs" / f"{run.run_id}.jsonl"
    looks = own.read_text().count('"kind":"gate_look"')
    assert looks >= 1
    assert _ledger_bytes(home) <= RUN_LEDGER_MAX_BYTES + LOOK_MAX_BYTES * (looks - 1), \
        _bytes_per_kind(home)

    issue = forge.get_issue(TARGET, 1)
    hypothesis = issue.body.strip().splitlines()[-1]
    (report,) = [c.body for c in forge.list_comments(TARGET, issue.number)
                 if "outerloop:report" in c.body]
    body = forge.get_pr(TARGET, pr.number).body
    for text in (report, body):
        assert "\0" not in text and "[cited text not found]" not in text
        assert "## Report" in text and "## Experiments" in text and "| sleep |" in text
        assert "2-opt after nearest neighbour" in text  # the agent's report, quoted
    assert hypothesis in report and "## Verdicts" in report
    assert "## Measured" in body and "- pairs: " in body


def test_demo_refuses_non_empty_home_when_given_one(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep me")
    done = _outerloop("demo", "--home", str(tmp_path))
    assert done.returncode == 1
    assert "not empty" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "x").read_text() == "keep me"
