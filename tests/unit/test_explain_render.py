"""`outerloop explain` over a ledger written here by the kernel's own writer: each
decision names the lines behind it, the text and JSON forms, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop import effects as eff
from outerloop.cli import main
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter, LogicalClock
from tests.e2e.explain_check import EXPLAINED, check_every_run, check_explained, performed

RUN = "tour-20260101T000000-agent-01"
TARGET = "acme/solver"


def _ledger(home: Path, *, failed_pr: bool = False) -> None:
    """A run claimed, admitted, one leg, a verdict, a draft review, its PR and an end."""
    clock = LogicalClock()
    base = home / "ledger" / "acme__solver"
    tick = LedgerWriter(base / "tick.jsonl", clock)
    own = LedgerWriter(base / "runs" / f"{RUN}.jsonl", clock)
    tick.append(ev.RunQueued(run=RUN, target=TARGET, benchmark="tour", agent="agent-01",
                             issue=7, issue_title="Shorter tours"))
    ws = eff.PrepareWorkspace(target=TARGET, run=RUN, base="a" * 40, branch="outerloop/x")
    tick.append(ev.Intent(run=RUN, key=ws.key, action=ws))
    tick.append(ev.Done(run=RUN, key=ws.key, result=ev.EffectResult(base="a" * 40)))
    own.append(ev.LegStarted(run=RUN, leg=1, role="climb", job_id="11",
                             refused="Refused: no code change"))
    own.append(ev.Verdict(run=RUN, verdict="improved", benchmark="tour", baseline="7.6",
                          candidate="6.5", delta="1.1", seeds=3, submission=1))
    finding = ev.ReviewFinding(severity="blocking", summary="reads the seed",
                               source="tamper check")
    own.append(ev.PublishReady(run=RUN, seal_sha="b" * 40, branch="outerloop/x", title="t",
                               body="b", draft=True, findings=[finding]))
    pr = eff.OpenPR(target=TARGET, run=RUN, head="outerloop/x", base="main", sha="b" * 40,
                    source="/src", title="t", body="b", draft=True)
    tick.append(ev.Intent(run=RUN, key=pr.key, action=pr))
    if failed_pr:
        tick.append(ev.Failed(run=RUN, key=pr.key, error="the forge said no"))
    else:
        tick.append(ev.Done(run=RUN, key=pr.key, result=ev.EffectResult(number=8)))
    tick.append(ev.RunEnded(run=RUN, ending="negative-result", reason="the agent stopped"))


def _explain(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["explain", *args, "--home", str(home)])
    return result.exit_code, result.output


def test_json_names_each_decision_with_the_ledger_lines_behind_it(tmp_path: Path) -> None:
    _ledger(tmp_path)
    code, out = _explain(tmp_path, RUN, "--json")
    assert code == 0, out
    shown = json.loads(out)
    assert shown["ok"] is True
    decisions = shown["decisions"]
    assert all(set(d) == {"at", "decision", "reason", "facts"} for d in decisions)
    named = [(d["decision"], [(f["file"], f["seq"]) for f in d["facts"]]) for d in decisions]
    tick, own = "acme__solver/tick.jsonl", f"acme__solver/runs/{RUN}.jsonl"
    assert named == [
        ("claimed", [(tick, 1)]), ("admitted", [(tick, 2), (tick, 3)]),
        ("leg", [(own, 1)]), ("refused", [(own, 1)]), ("verdict", [(own, 2)]),
        ("review", [(own, 3)]), ("publish-draft", [(own, 3)]),
        ("pr-draft", [(tick, 4), (tick, 5)]), ("ended", [(tick, 6)])]
    by = {d["decision"]: d["reason"] for d in decisions}
    assert "issue #7" in by["claimed"] and "Refused: no code change" in by["refused"]
    assert "reads the seed" in by["publish-draft"] and "tamper check" in by["publish-draft"]
    assert "negative-result" in by["ended"] and "the agent stopped" in by["ended"]


def test_text_is_one_line_a_decision_citing_file_and_seq(tmp_path: Path) -> None:
    _ledger(tmp_path)
    code, out = _explain(tmp_path, RUN)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == f"run {RUN}" and len(lines) == 10
    assert lines[2].split()[2] == "admitted" and lines[2].endswith("[tick.jsonl:2, tick.jsonl:3]")
    assert lines[-1].endswith("[tick.jsonl:6]") and "ended" in lines[-1]


def test_failed_effect_is_named_failed_never_as_the_action(tmp_path: Path) -> None:
    _ledger(tmp_path, failed_pr=True)
    decisions = json.loads(_explain(tmp_path, RUN, "--json")[1])["decisions"]
    (pr,) = [d for d in decisions if d["decision"].startswith("pr-")]
    assert pr["decision"] == "pr-draft-failed" and "the forge said no" in pr["reason"]


def test_issue_explains_each_run_that_answered_it(tmp_path: Path) -> None:
    _ledger(tmp_path)
    code, out = _explain(tmp_path, "--issue", f"{TARGET}#7")
    assert code == 0, out
    assert out.startswith(f"issue {TARGET}#7\n") and f"\nrun {RUN}\n" in out


def test_unknown_run_is_one_line_naming_it_and_exits_as_status_does(tmp_path: Path) -> None:
    _ledger(tmp_path)
    code, out = _explain(tmp_path, "no-such-run")
    assert code == 1 and "Traceback" not in out
    assert out.count("\n") == 1 and "'no-such-run'" in out and "outerloop status" in out


def test_unknown_issue_and_bad_issue_are_errors_naming_the_argument(tmp_path: Path) -> None:
    _ledger(tmp_path)
    code, out = _explain(tmp_path, "--issue", f"{TARGET}#99")
    assert code == 1 and out.count("\n") == 1 and f"{TARGET}#99" in out
    code, out = _explain(tmp_path, "--issue", "nonsense")
    assert code == 2 and "'nonsense'" in out and "Traceback" not in out
    code, out = _explain(tmp_path)
    assert code == 2 and "RUN or --issue" in out


def test_home_without_ledger_is_one_line_naming_the_home(tmp_path: Path) -> None:
    code, out = _explain(tmp_path / "nowhere", RUN)
    assert code == 1 and out.count("\n") == 1 and "nowhere" in out and "--home" in out


def _archive(home: Path) -> None:
    """The run's archive file: a failed attempt, then the archive, then its restore."""
    own = LedgerWriter(home / "ledger" / "acme__solver" / "archive" / f"{RUN}.jsonl",
                       LogicalClock(100))
    own.append(ev.ArchiveFailed(run=RUN, error="bucket unreachable"))
    own.append(ev.Archived(run=RUN, where="s3://b/x", files=[]))
    own.append(ev.ArchiveRestored(run=RUN, where="s3://b/x"))


def test_archive_attempts_are_decisions_naming_their_line(tmp_path: Path) -> None:
    _ledger(tmp_path)
    _archive(tmp_path)
    decisions = json.loads(_explain(tmp_path, RUN, "--json")[1])["decisions"]
    where = f"acme__solver/archive/{RUN}.jsonl"
    assert [(d["decision"], d["facts"][0]["seq"]) for d in decisions
            if d["facts"][0]["file"] == where] == [
        ("archive-failed", 1), ("archived", 2), ("archive-restored", 3)]
    assert "bucket unreachable" in decisions[-3]["reason"]


def test_the_e2e_check_accepts_explain_over_the_ledger_it_reads(tmp_path: Path) -> None:
    """The check every e2e module of ``EXPLAINED`` runs, on a ledger whose decisions are
    known: each of them, in order, from the tick, the run file and the archive."""
    _ledger(tmp_path, failed_pr=True)
    _archive(tmp_path)
    assert check_every_run(tmp_path) == [RUN]
    assert [name for name, _ in performed(tmp_path, RUN)] == [
        "claimed", "admitted", "leg", "verdict", "review", "pr-draft-failed", "ended",
        "archive-failed", "archived", "archive-restored"]


def test_the_e2e_check_fails_on_a_kind_it_has_no_decision_for(tmp_path: Path) -> None:
    """A newer version's event about the run (explain says nothing of it): the check
    names it rather than pass over a decision it cannot see."""
    _ledger(tmp_path)
    with (tmp_path / "ledger" / "acme__solver" / "runs" / f"{RUN}.jsonl").open("a") as f:
        f.write(json.dumps({"v": 1, "kind": "quorum_reached", "seq": 4, "lc": 50,
                            "at": "2026-01-02T00:00:00Z", "run": RUN}) + "\n")
    with pytest.raises(AssertionError, match="'quorum_reached' about a run has no expected"):
        check_explained(tmp_path, RUN)


def test_each_explained_e2e_module_exists() -> None:
    e2e = Path(__file__).resolve().parents[1] / "e2e"
    assert sorted(m for m in EXPLAINED if not (e2e / f"{m}.py").is_file()) == []
