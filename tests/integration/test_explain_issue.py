"""``outerloop explain --issue`` explains an issue that never got a run (issue 51): the
kernel's words on it from the ledger, then what the next tick does with it, asked of the
forge and of intake's own rule. Real homes, the local forge, real ticks."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from outerloop.cli import main
from outerloop.config import Settings
from outerloop.kernel.tick import run_tick
from tests.support import TARGET, forge, make_home, open_issue, state_of


def _explain(settings: Settings, number: int, *more: str) -> Result:
    return CliRunner().invoke(main, ["explain", "--issue", f"{TARGET}#{number}",
                                     "--home", str(settings.home), *more])


def test_issue_naming_two_benchmarks_is_explained_from_the_ledger_and_the_rule(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    number = open_issue(settings, "two ideas", "tour and spread at once")
    run_tick(settings)
    assert state_of(settings).runs == {}
    result = _explain(settings, number)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"issue {TARGET}#{number}" and len(lines) == 3
    assert "post-status" in lines[1] and "names 2 benchmarks (tour, spread)" in lines[1]
    assert lines[1].endswith("[tick.jsonl:1, tick.jsonl:2]")
    assert "outlook-benchmarks" in lines[2] and "names 2 benchmarks" in lines[2]
    shown = json.loads(_explain(settings, number, "--json").stdout)
    assert shown["outlook"] == {"decision": "benchmarks",
                                "reason": "it names 2 benchmarks (tour, spread)"}
    assert [d["decision"] for d in shown["decisions"]] == ["post-status", "outlook-benchmarks"]
    assert shown["decisions"][-1]["facts"] == []


def test_stranger_issue_the_ledger_never_mentions_is_explained_by_standing(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    number = open_issue(settings, "an idea", "try tour", as_user="rando")
    run_tick(settings)
    result = _explain(settings, number)
    assert result.exit_code == 0, result.output
    (_, why) = result.stdout.splitlines()
    assert "outlook-skipped" in why and "rando" in why and "outerloop:approved" in why


def test_issue_the_next_tick_claims_says_so_when_nothing_holds_it(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    number = open_issue(settings, "an idea", "try tour")
    shown = json.loads(_explain(settings, number, "--json").stdout)
    assert shown["outlook"]["decision"] == "claim"
    assert state_of(settings).runs == {}, "explain claims nothing"


def test_issue_of_a_target_whose_contract_does_not_load_names_the_contract(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    number = open_issue(settings, "an idea", "try tour")
    local = forge(settings)
    head = local.branch_head(TARGET, "main")
    local.commit_files(TARGET, "main", {".outerloop.yaml": b"benchmarks: []\n"}, "break it",
                       head)
    shown = json.loads(_explain(settings, number, "--json").stdout)
    assert shown["outlook"]["decision"] == "target"
    assert "contract does not load" in shown["outlook"]["reason"]


def test_issue_neither_the_ledger_nor_the_forge_knows_is_one_line_exiting_1(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    result = _explain(settings, 9)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and f"{TARGET}#9" in result.stderr
