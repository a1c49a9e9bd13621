"""Eval-only paths (``benchmarks[].eval_only``) never reach the agent's side of a run.

Real git throughout, on the tinyclf example (its ``data/test_labels.csv`` is
eval-only): the agent's clone holds neither the file nor any object of it, the
candidate's snapshot puts the base's copy back (so the seal keeps it unchanged and no
deletion is measured), a write there is refused with a note naming it, and every
checkout made for a launch or a judge leaves it out.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from outerloop.attempt.candidate import eval_only_refusal, snapshot
from outerloop.attempt.context import RunContext
from outerloop.attempt.panel import prepare_judge_dir
from outerloop.config import Settings
from outerloop.contract import CONTRACT_FILE, Contract, load_contract_text
from outerloop.effects import decode_effect
from outerloop.forge import localgit as g
from outerloop.kernel.actions import PrepareWorkspace
from outerloop.kernel.executor import Effects, Executor
from outerloop.ledger.book import LedgerWriter, LogicalClock, run_file
from outerloop.ledger.state import RunRecord, State
from outerloop.limits import target_limits
from outerloop.run.paths import RunPaths, branch_name
from outerloop.run.workspace import (
    changed_paths,
    checkout,
    prepare_workspace,
    read_at,
    seal,
    tree_of,
)
from tests.support import TARGET, TINYCLF, forge, make_home

RUN = "accuracy-20261201T000000-agent-01"
LABELS = "data/test_labels.csv"


def _workspace(tmp_path: Path, withhold: tuple[str, ...] = (LABELS,)) -> tuple[
        Settings, RunPaths, str, Contract]:
    settings = make_home(tmp_path, target_dir=TINYCLF)
    local = forge(settings)
    base = local.branch_head(TARGET, "main")
    assert base is not None
    prepare_workspace(settings, local, PrepareWorkspace(
        target=TARGET, run=RUN, base=base, branch=branch_name("agent-01", RUN),
        withhold=withhold))
    paths = RunPaths.of(settings.home, RUN)
    text = read_at(paths, base, CONTRACT_FILE)
    assert text is not None
    return settings, paths, base, load_contract_text(text, "tinyclf")


def _objects(repo: Path) -> set[str]:
    out = g.git_text(["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
                     cwd=repo)
    return set(out.split())


def _blob(paths: RunPaths, commit: str, path: str) -> str:
    return g.git_text(["rev-parse", f"{commit}:{path}"], git_dir=paths.kernel_git)


def test_agent_clone_holds_no_eval_only_file_or_object_when_the_contract_withholds_it(
        tmp_path: Path) -> None:
    _, paths, base, _ = _workspace(tmp_path)

    assert not (paths.ws / LABELS).exists()
    assert (paths.ws / "data" / "train.csv").exists()
    assert (paths.ws / "model" / "classifier.py").exists()
    objects = _objects(paths.ws)
    assert _blob(paths, base, LABELS) not in objects
    assert base not in objects  # no commit whose tree (or history) holds the labels
    assert len(g.git_text(["rev-list", "--parents", "-1", "HEAD"], cwd=paths.ws).split()) == 1
    assert "eval-only files are withheld" in g.git_text(["log", "--format=%B", "-1"],
                                                        cwd=paths.ws)
    assert g.git_text(["rev-parse", "--abbrev-ref", "HEAD"], cwd=paths.ws) == branch_name(
        "agent-01", RUN)
    assert g.git_text(["branch", "--list"], cwd=paths.ws).split() == [
        "*", branch_name("agent-01", RUN)]
    assert read_at(paths, base, LABELS) == (TINYCLF / LABELS).read_text()  # kernel keeps it


def test_agent_clone_is_the_base_with_its_history_when_nothing_is_withheld(
        tmp_path: Path) -> None:
    _, paths, base, _ = _workspace(tmp_path, withhold=())

    assert (paths.ws / LABELS).exists()
    assert g.git_text(["rev-parse", "HEAD"], cwd=paths.ws) == base


def test_workspace_intent_recorded_before_withholding_existed_still_reads() -> None:
    old = (b'{"kind":"prepare_workspace","target":"demo/t","run":"r1","base":"abc",'
           b'"branch":"outerloop/a/r1"}')
    action = decode_effect(old)
    assert isinstance(action, PrepareWorkspace) and action.withhold == ()
    assert msgspec.json.encode(action) == old  # nothing withheld: written as before
    new = msgspec.json.encode(PrepareWorkspace(target="demo/t", run="r1", base="abc",
                                               branch="b", withhold=(LABELS,)))
    assert decode_effect(new) == PrepareWorkspace(target="demo/t", run="r1", base="abc",
                                                  branch="b", withhold=(LABELS,))


def test_seal_keeps_the_base_eval_only_files_when_the_agent_changed_only_its_model(
        tmp_path: Path) -> None:
    _, paths, base, contract = _workspace(tmp_path)
    model = paths.ws / "model" / "classifier.py"
    model.write_text(model.read_text() + "\n# tuned\n")

    shot = snapshot(paths, base, contract)

    assert shot.eval_only == []
    assert changed_paths(paths, base, shot.tree) == ["model/classifier.py"]
    sealed = seal(paths, branch_name("agent-01", RUN), base, shot.tree, "seal\n")
    assert _blob(paths, sealed, LABELS) == _blob(paths, base, LABELS)


def test_agent_write_at_an_eval_only_path_is_refused_with_a_note_naming_it(
        tmp_path: Path) -> None:
    _, paths, base, contract = _workspace(tmp_path)
    (paths.ws / LABELS).write_text("id,label\n0,a\n")  # labels that match its predictions
    (paths.ws / "DATA").mkdir()
    (paths.ws / "DATA" / "Test_Labels.csv").write_text("id,label\n")  # another case

    shot = snapshot(paths, base, contract)

    assert shot.eval_only == ["DATA/Test_Labels.csv", LABELS]
    assert changed_paths(paths, base, shot.tree) == []  # the tree holds the base's copy
    note = eval_only_refusal(shot.eval_only)
    assert note is not None
    assert note.startswith("Refused:") and LABELS in note and "eval-only" in note
    assert "nothing was launched, sealed or charged" in note


def test_checkout_never_writes_a_withheld_path_when_given_the_eval_only_paths(
        tmp_path: Path) -> None:
    _, paths, base, contract = _workspace(tmp_path)
    withheld, full = paths.tree("launch"), paths.tree("full")

    checkout(paths, base, withheld, contract.eval_only)
    checkout(paths, base, full)

    assert not (withheld / LABELS).exists() and (withheld / "predict.py").exists()
    assert (full / LABELS).exists()
    assert not list(withheld.parent.glob(".*.index"))


def test_judges_get_neither_side_of_the_eval_only_files(tmp_path: Path) -> None:
    settings, paths, base, contract = _workspace(tmp_path)
    (paths.ws / "model" / "classifier.py").write_text("K = 5\n")
    sealed = seal(paths, branch_name("agent-01", RUN), base,
                  snapshot(paths, base, contract).tree, "seal\n")
    run = RunRecord(run_id=RUN, target=TARGET, benchmark="accuracy", agent="agent-01",
                    issue=None, issue_title="", hypothesis="", queued_at="",
                    base_sha=base, park_seal=sealed)
    writer = LedgerWriter(run_file(settings.home, TARGET, RUN), LogicalClock(0))
    benchmark = contract.benchmarks[0]
    ctx = RunContext(settings, State(), run, paths, writer,
                     Executor(Effects(settings), lambda _target: writer), contract,
                     benchmark, target_limits(contract, settings))
    where = paths.root / "review" / "s1-j1"

    prepare_judge_dir(ctx, where, where.with_name("s1-j1-home"))

    for side in ("base", "candidate"):
        assert (where / side / "predict.py").exists()
        assert not (where / side / LABELS).exists()
    assert tree_of(paths, sealed) != tree_of(paths, base)


def test_base_labels_are_put_back_when_the_agent_made_a_directory_of_their_path(
        tmp_path: Path) -> None:
    _, paths, base, contract = _workspace(tmp_path)
    (paths.ws / LABELS).mkdir()
    (paths.ws / LABELS / "mine.csv").write_text("id,label\n")

    shot = snapshot(paths, base, contract)

    assert shot.eval_only == [f"{LABELS}/mine.csv"]
    assert changed_paths(paths, base, shot.tree) == []
