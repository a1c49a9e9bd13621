"""A base branch that moves during a run, through real ticks (issue 48, point 3): before a
ready pull request the kernel merges the credited candidate onto the current base; a base
that moved without a conflict has the merge measured again against it (the PR shows that
evidence, and merges cleanly); a conflict wakes the agent to rebase as a revision, and no
pull request opens for the conflicting candidate; a base that did not move costs no
extra gate."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.forge import localgit as g
from outerloop.ledger.state import State
from tests.support import (
    AGENTS,
    TARGET,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def _main_moves(settings: Settings, work: Path, path: str, edit: str, old: str = "") -> str:
    """A maintainer's commit on the target's main branch (``edit`` replaces ``old`` in
    ``path``, or is a new file's text): its sha."""
    bare = forge(settings).repo_dir(TARGET)
    _git("clone", "--quiet", "--branch", "main", str(bare), str(work))
    file = work / path
    if old:
        assert old in file.read_text()
        file.write_text(file.read_text().replace(old, edit))
    else:
        file.write_text(edit + "\n")
    _git("add", path, cwd=work)
    _git("-c", "user.name=maintainer", "-c", "user.email=m@example.com", "commit", "--quiet",
         "-m", "main moves", cwd=work)
    _git("push", "--quiet", "origin", "main", cwd=work)
    return _git("rev-parse", "HEAD", cwd=work)


def _started(state: State) -> bool:
    return any(r.base_sha is not None and r.legs > 0 for r in state.runs.values())


def _fetches(settings: Settings) -> int:
    """The kernel's fetches of a moved base (``fetch_base`` intents)."""
    count = 0
    for path in (settings.home / "ledger").rglob("tick.jsonl"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event.get("kind") == "intent" and event["action"]["kind"] == "fetch_base":
                count += 1
    return count


def test_credited_candidate_is_measured_again_against_a_base_that_moved_without_conflict(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(make_home(tmp_path))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, _started, timeout_s=300)
    (run,) = state.runs.values()
    first_base = run.base_sha
    moved = _main_moves(settings, tmp_path / "maintainer", "NOTES.md", "A maintainer's note.")

    state = tick_until(settings, lambda s: in_review(s) or s.runs[run.run_id].ended,
                       timeout_s=900)
    run = state.runs[run.run_id]
    assert not run.ended, run.end_reason
    assert run.base_sha == moved and first_base != moved
    assert [v.verdict for v in run.verdicts] == ["improved", "improved"]
    assert run.submissions == 2 and _fetches(settings) == 1
    assert run.rebased is not None and run.rebased.was == first_base
    pr = forge(settings).get_pr(TARGET, run.pr_number or 0)
    assert pr.head_sha == run.rebased.seal == run.published_sha
    assert f"base commit: `{moved}`" in pr.body and "- base moved:" in pr.body
    measured = pr.body.split("## Measured", 1)[1].split("## Experiments", 1)[0]
    assert "submission 2: improved" in measured  # the evidence against the new base
    bare = forge(settings).repo_dir(TARGET)
    assert g.is_ancestor(moved, pr.head_sha, git_dir=bare)  # merges into main cleanly
    print(f"base moved: verdicts {[(v.baseline, v.candidate) for v in run.verdicts]}")


def _rebasing_agent(tmp_path: Path) -> Path:
    """tinytsp's 2-opt agent whose third leg (the base moved and conflicts) merges the new
    base from its channel, keeping its own lines where they conflict, and submits."""
    first = (AGENTS / "tinytsp-2opt.yaml").read_text().split("  # Leg 3")[0]
    path = tmp_path / "agent.yaml"
    path.write_text(first + (
        "  # Leg 3: the base moved and conflicts; merge it and submit again.\n"
        "  - - expect: \"solver/tour.py\"\n"
        "    - shell: \"git add -A && git -c user.name=a -c user.email=a@example.com commit "
        "-qm 2-opt && git fetch -q .outerloop/base.bundle refs/outerloop/base && git -c "
        "user.name=a -c user.email=a@example.com merge -q -X ours --no-edit FETCH_HEAD\"\n"
        "    - syscall: \"submit --report report.md\"\n"
        "    - syscall: sleep\n"))
    return path


def test_credited_candidate_that_conflicts_with_a_moved_base_wakes_its_agent_to_rebase(
        tmp_path: Path) -> None:
    settings = jobs_import_this_checkout(make_home(tmp_path, _rebasing_agent(tmp_path)))
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, _started, timeout_s=300)
    (run,) = state.runs.values()
    moved = _main_moves(settings, tmp_path / "maintainer", "solver/tour.py",
                        "Baseline (maintained): nearest neighbour.",
                        old="Baseline: nearest neighbour.")

    state = tick_until(settings, lambda s: s.runs[run.run_id].rebased is not None,
                       timeout_s=900)
    asked = state.runs[run.run_id].rebased
    assert asked is not None and asked.conflicts == ["solver/tour.py"] and not asked.seal
    assert forge(settings).list_prs(TARGET) == []  # no broken PR

    state = tick_until(settings, lambda s: in_review(s) or s.runs[run.run_id].ended,
                       timeout_s=900)
    run = state.runs[run.run_id]
    assert not run.ended, run.end_reason
    prompts = sorted((settings.home / "runs" / run.run_id / "legs").glob("*-prompt.md"))
    woken = prompts[-1].read_text()
    assert "solver/tour.py" in woken and "base.bundle" in woken
    assert run.base_sha == moved and run.submissions == 2 and _fetches(settings) == 1
    pr = forge(settings).get_pr(TARGET, run.pr_number or 0)
    assert f"base commit: `{moved}`" in pr.body
    bare = forge(settings).repo_dir(TARGET)
    assert g.is_ancestor(moved, pr.head_sha, git_dir=bare)  # the rebase merges cleanly
    print(f"conflict: verdicts {[(v.baseline, v.candidate) for v in run.verdicts]}")
