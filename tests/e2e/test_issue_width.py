"""Width per issue (issue 50, point 1) through real ticks on the local forge: a
maintainer's ``outerloop:width:N`` label (or the contract's ``budgets.issue_width``) gives
one issue up to N runs at once, each by its own agent slot, placed by intake and
admission one at a time within the target's limits; re-ticking never starts another;
a width above the slots is capped; an outsider's label does not count; the week's runs
still hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.forge.markers import parse_markers
from outerloop.kernel.tick import run_tick
from outerloop.ledger.state import State
from tests.support import (
    EXAMPLE_TARGET,
    TARGET,
    forge,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e

SCRIPT = """legs:
  - - shell: "sleep 4"
    - write: {path: report.md, content: "# Nothing tried\\n\\nA slot that only waits.\\n"}
    - syscall: "stop --report report.md"
"""


def _target(tmp_path: Path, budgets: str, runs_per_week: int = 50,
            lines: bool = False) -> Path:
    """tinytsp with ``budgets`` replacing its ``max_active_attempts: 1`` line (and, with
    ``lines``, research lines on its ``tour`` benchmark)."""
    target = tmp_path / "target"
    shutil.copytree(EXAMPLE_TARGET, target)
    contract = target / ".outerloop.yaml"
    text = contract.read_text()
    assert "  max_active_attempts: 1\n" in text
    assert "runs_per_week: 50\n" in text
    contract.write_text(text.replace("  max_active_attempts: 1\n", budgets, 1).replace(
        "runs_per_week: 50\n", f"runs_per_week: {runs_per_week}\n", 1))
    if lines:
        text = contract.read_text()
        assert "    eval_minutes: 5\n  - name: spread" in text
        contract.write_text(text.replace("    eval_minutes: 5\n  - name: spread",
                                         "    eval_minutes: 5\n    lines: 2\n  - name: spread"))
    return target


def _script(tmp_path: Path) -> Path:
    """An agent that waits a few seconds and stops (its runs stay live over the first
    ticks)."""
    script = tmp_path / "wait.yaml"
    script.write_text(SCRIPT)
    return script


def _home(tmp_path: Path, budgets: str, runs_per_week: int = 50,
          lines: bool = False) -> Settings:
    target = _target(tmp_path, budgets, runs_per_week, lines)
    return jobs_import_this_checkout(make_home(tmp_path, _script(tmp_path), target_dir=target))


def _claims(settings: Settings, number: int) -> list[str]:
    return [m.key for c in forge(settings).list_comments(TARGET, number)
            if c.author == settings.forge.login
            for m in parse_markers(c.body) if m.kind == "claim"]


def _status(settings: Settings, number: int) -> list[tuple[int, str]]:
    """The kernel's width status comments on the issue: (id, body)."""
    return [(c.id, c.body) for c in forge(settings).list_comments(TARGET, number)
            if c.author == settings.forge.login
            and any(m.kind == "width" for m in parse_markers(c.body))]


def _edit_intents(settings: Settings) -> int:
    return sum(p.read_text().count('"kind":"edit_comment"')
               for p in (settings.home / "ledger").rglob("*.jsonl"))


def _ticks(settings: Settings, n: int) -> State:
    for _ in range(n):
        run_tick(settings)
    return state_of(settings)


def _all_ended(state: State) -> bool:
    return bool(state.runs) and all(r.ended for r in state.runs.values())


def test_a_width_label_gets_two_runs_by_two_slots_and_no_third(tmp_path: Path) -> None:
    settings = _home(tmp_path, "  max_active_attempts: 3\n", lines=True)
    number = open_issue(settings, "Shorter tours", "Try 2-opt on tour.")
    forge(settings).label_as(TARGET, number, "outerloop:width:2", "maintainer")

    state = _ticks(settings, 4)  # one claim per target per tick: two ticks place both
    runs = state.runs_of_issue(TARGET, number)
    assert sorted(r.agent for r in runs) == ["agent-01", "agent-02"]
    assert all(r.admitted for r in runs)
    assert sorted(r.line.branch for r in runs if r.line is not None) == [
        "agents/agent-01", "agents/agent-02"]  # each on its own slot's research line
    assert sorted(_claims(settings, number)) == sorted(r.run_id for r in runs)
    ((first_id, body),) = _status(settings, number)  # one status comment for both runs
    assert "width 2" in body and all(f"`{r.run_id}`" in body for r in runs)

    state = tick_until(settings, _all_ended, timeout_s=180)
    _ticks(settings, 1)  # the listing catches up with the tick that ended the last run
    edits = _edit_intents(settings)
    state = _ticks(settings, 2)  # answered: no third run, not even once both ended
    assert len(state.runs) == 2
    assert _edit_intents(settings) == edits  # an unchanged listing is not edited again
    assert len(_claims(settings, number)) == 2
    ((last_id, body),) = _status(settings, number)  # the same comment, edited
    assert last_id == first_id
    assert body.count("ended: ") == 2, body
    assert not any(k.startswith("edit:") for k in state.failures)


def test_the_contracts_width_is_capped_by_the_slots_and_an_outsiders_label_ignored(
        tmp_path: Path) -> None:
    settings = _home(tmp_path, "  max_active_attempts: 2\n  issue_width: 2\n")
    first = open_issue(settings, "Shorter tours", "Try 2-opt on tour.")
    forge(settings).label_as(TARGET, first, "outerloop:width:5", "maintainer")
    second = open_issue(settings, "Tours again", "Try 3-opt on tour.")
    forge(settings).label_as(TARGET, second, "outerloop:width:1", "stranger")

    state = _ticks(settings, 4)
    assert sorted(r.agent for r in state.runs_of_issue(TARGET, first)) == [
        "agent-01", "agent-02"]  # 5 asked, capped at the target's two slots
    assert state.runs_of_issue(TARGET, second) == []  # both slots are taken: it waits
    state = tick_until(settings, lambda s: len(s.runs_of_issue(TARGET, second)) == 2,
                       timeout_s=90)  # the stranger's width:1 does not count: 2 runs
    tick_until(settings, _all_ended, timeout_s=180)


def test_the_weeks_runs_still_hold_a_wide_issue(tmp_path: Path) -> None:
    settings = _home(tmp_path, "  max_active_attempts: 3\n  issue_width: 3\n", 2)
    number = open_issue(settings, "Shorter tours", "Try 2-opt on tour.")

    state = _ticks(settings, 5)
    assert len(state.runs_of_issue(TARGET, number)) == 2  # width 3, the week allows 2
    assert number in {n for (_repo, n) in state.waiting}
    tick_until(settings, _all_ended, timeout_s=180)


def test_a_width_label_on_github_gets_two_runs_and_one_edited_status_comment(
        tmp_path: Path) -> None:
    from tests.e2e.test_github_research_run import _as, github_home
    from tests.github.fake import FakeGitHub
    from tests.github.fixtures import KERNEL, MAINTAINER, finish

    fake = FakeGitHub(tmp_path / "fake-github").start()
    fake.create_repo(TARGET, _target(tmp_path, "  max_active_attempts: 3\n"))
    fake.grant(TARGET, MAINTAINER, "admin")
    fake.grant(TARGET, KERNEL, "write")
    try:
        settings = jobs_import_this_checkout(github_home(tmp_path, fake,
                                                         script=str(_script(tmp_path))))
        issue = _as(fake, MAINTAINER).create_issue(title="Shorter tours",
                                                   body="Try 2-opt on tour.")
        issue.add_to_labels("outerloop:width:2")
        state = _ticks(settings, 4)
        runs = state.runs_of_issue(TARGET, issue.number)
        assert sorted(r.agent for r in runs) == ["agent-01", "agent-02"]
        state = tick_until(settings, _all_ended, timeout_s=180)
        state = _ticks(settings, 2)
        assert len(state.runs) == 2
        comments = [c for c in issue.get_comments() if c.user.login == KERNEL]
        status = [c for c in comments if any(m.kind == "width" for m in parse_markers(c.body))]
        assert len(status) == 1 and status[0].body.count("ended: ") == 2, status
        assert len([c for c in comments if any(
            m.kind == "claim" for m in parse_markers(c.body))]) == 2
    finally:
        fake.stop()
    finish(fake)


def test_a_claim_the_ledger_lost_stops_a_wide_issue_taking_another_run(
        tmp_path: Path) -> None:
    """The forge remembers claims: a kernel claim marker naming a run this ledger does
    not hold (a restore from an older backup) keeps a wide issue from being claimed
    again, as it keeps a narrow one; and a maintainer's malformed width label is said
    in the status comment, with the fix."""
    from outerloop.forge.markers import with_marker

    settings = _home(tmp_path, "  max_active_attempts: 3\n  issue_width: 2\n")
    number = open_issue(settings, "Shorter tours", "Try 2-opt on tour.")
    other = open_issue(settings, "Tours again", "Try 3-opt on tour.")
    forge(settings).label_as(TARGET, other, "outerloop:width:two", "maintainer")
    state = _ticks(settings, 1)
    (first,) = state.runs_of_issue(TARGET, number)
    forge(settings).post_comment(TARGET, number, with_marker("claimed", "claim", "lost-run"))
    state = _ticks(settings, 3)
    assert [r.run_id for r in state.runs_of_issue(TARGET, number)] == [first.run_id]
    assert len(state.runs_of_issue(TARGET, other)) == 2  # the label does not parse: the
    # contract's width holds
    ((_id, body),) = _status(settings, other)
    assert "outerloop:width:two is not a width; fix: outerloop:width:N" in body
    tick_until(settings, _all_ended, timeout_s=120)
