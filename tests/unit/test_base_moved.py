"""The base-moved rule as planned and folded (issue 48, point 3; the run through real
ticks is tests/e2e/test_base_moved.py): a ready candidate whose base did not move is
published with no extra gate; one whose base moved is fetched and merged first, and
nothing opens meanwhile; a draft is published as measured."""

from __future__ import annotations

from pathlib import Path

import msgspec

from outerloop.attempt.verdict_view import same_tree_verdict
from outerloop.forge import localgit as g
from outerloop.kernel.actions import FetchBase, OpenPR, SubmitJob
from outerloop.kernel.lanes import followup
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.events import Done, EffectResult, Intent
from outerloop.ledger.state import ParkReason, RunState, State
from outerloop.run import workspace
from outerloop.run.paths import RunPaths
from outerloop.vocabulary import GateVerdict
from tests.unit.test_lanes import TARGET, _run, _view

BASE = "a" * 40  # the base branch's head the view observes
OLD = "b" * 40
SEAL = "c" * 40


def _publishing(base: str, *, draft: bool = False) -> State:
    state = State()
    ready = ev.PublishReady(seal_sha=SEAL, branch="outerloop/agent-01/r", title="t",
                            body="b", draft=draft)
    state.runs["tour-1-agent-01"] = _run(state=RunState.PARKED, park_reason=ParkReason.PUBLISH,
                                         publish=ready, base_sha=base,
                                         branch="outerloop/agent-01/r")
    return state


def test_ready_candidate_opens_its_pr_with_no_extra_gate_when_the_base_did_not_move() -> None:
    actions = followup.plan(_view(_publishing(BASE)), [])
    assert [type(a) for a in actions] == [OpenPR]


def test_ready_candidate_is_fetched_for_a_merge_not_published_when_the_base_moved() -> None:
    (fetch,) = followup.plan(_view(_publishing(OLD)), [])
    assert isinstance(fetch, FetchBase) and (fetch.base, fetch.seal) == (BASE, SEAL)


def test_draft_is_published_as_measured_when_the_base_moved() -> None:
    assert [type(a) for a in followup.plan(_view(_publishing(OLD, draft=True)), [])] == [OpenPR]


def _fold(state: State, *events: ev.Event) -> None:
    for n, event in enumerate(events, 1):
        apply_event(state, "o__n/tick.jsonl", msgspec.structs.replace(event, seq=n, lc=n))


def test_fetched_base_sends_the_run_to_a_merge_job_and_opens_nothing() -> None:
    state = _publishing(OLD)
    fetch = FetchBase(target=TARGET, run="tour-1-agent-01", base=BASE, seal=SEAL)
    _fold(state, Intent(action=fetch),
          Done(key=fetch.key, result=EffectResult(base=BASE)))
    run = state.runs["tour-1-agent-01"]
    assert run.rebase_to == BASE and run.rebasing
    (job,) = followup.plan(_view(state), [])
    assert isinstance(job, SubmitJob) and "-rebase-aaaaaaaa-1" in job.spec.name


def test_conflict_on_record_is_feedback_naming_the_paths_and_no_publication() -> None:
    state = _publishing(OLD)
    run = state.runs["tour-1-agent-01"]
    run.rebase_to = BASE
    _fold(state, ev.BaseMoved(run=run.run_id, base=BASE, was=OLD,
                              conflicts=["solver/tour.py"]))
    assert run.base_sha == BASE and run.publish is None and run.rebase_to is None
    (told,) = run.undelivered.values()
    assert "solver/tour.py" in told.text and "base.bundle" in told.text


def _tree(repo: Path, text: str) -> str:
    blob = g.git_text(["hash-object", "-w", "--stdin"], git_dir=repo / ".git",
                      stdin=text.encode())
    return g.git_text(["mktree"], git_dir=repo / ".git",
                      stdin=f"100644 blob {blob}\tf.py\n".encode())


def test_seal_after_a_rebase_takes_the_moved_base_as_second_parent(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path / "run")
    paths.kernel.mkdir(parents=True)
    g.git(["init", "-q"], cwd=paths.kernel)
    base = g.commit_tree(paths.kernel_git, _tree(paths.kernel, "a\n"), [], "base", "t")
    g.git(["update-ref", "refs/heads/b", base], git_dir=paths.kernel_git)  # as admitted
    first = workspace.seal(paths, "b", base, _tree(paths.kernel, "a\nmine\n"), "s1")
    assert _parents(paths, first) == [base]
    moved = g.commit_tree(paths.kernel_git, _tree(paths.kernel, "main\na\n"), [base], "m", "t")
    second = workspace.seal(paths, "b", moved, _tree(paths.kernel, "main\na\nmine\n"), "s2")
    assert _parents(paths, second) == [first, moved]  # merges into main cleanly
    third = workspace.seal(paths, "b", moved, _tree(paths.kernel, "main\na\nmine 2\n"), "s3")
    assert _parents(paths, third) == [second]
    moved_again = g.commit_tree(paths.kernel_git, _tree(paths.kernel, "x\n"), [moved], "m", "t")
    same = workspace.seal(paths, "b", moved_again, _tree(paths.kernel, "main\na\nmine 2\n"),
                          "s4")  # the same tree, but the base moved: a new seal merges it in
    assert _parents(paths, same) == [third, moved_again]


def _parents(paths: RunPaths, commit: str) -> list[str]:
    return g.git_text(["rev-list", "--parents", "-n1", commit],
                      git_dir=paths.kernel_git).split()[1:]


def test_merge_onto_names_the_conflicting_paths_when_both_sides_changed_a_line(
        tmp_path: Path) -> None:
    paths = RunPaths(tmp_path / "run")
    paths.kernel.mkdir(parents=True)
    g.git(["init", "-q"], cwd=paths.kernel)
    base = g.commit_tree(paths.kernel_git, _tree(paths.kernel, "a\n"), [], "base", "t")
    seal = g.commit_tree(paths.kernel_git, _tree(paths.kernel, "mine\n"), [base], "s", "t")
    moved = g.commit_tree(paths.kernel_git, _tree(paths.kernel, "main\n"), [base], "m", "t")
    assert workspace.merge_onto(paths, "b", moved, seal) == ("", ["f.py"])
    clean = g.commit_tree(paths.kernel_git, _tree(paths.kernel, "a\n"), [base], "m2", "t")
    merged, conflicts = workspace.merge_onto(paths, "b", clean, seal)
    assert conflicts == [] and _parents(paths, merged) == [seal, clean]
    assert g.resolve("refs/heads/b", git_dir=paths.kernel_git) == merged


def test_same_tree_is_measured_again_when_its_verdict_was_against_another_base() -> None:
    verdict = ev.Verdict(verdict=GateVerdict.IMPROVED, benchmark="tour", base_sha=OLD,
                         seal_sha=SEAL, submission=1)
    run = _run(base_sha=OLD, trees={1: "t" * 40}, verdicts=[verdict])
    assert same_tree_verdict(run, "t" * 40) is not None  # a repeat on the same base
    run.base_sha = BASE
    run.rebased = ev.BaseMoved(base=BASE, was=OLD, conflicts=["f.py"])
    assert same_tree_verdict(run, "t" * 40) is None  # the base moved: a new question
