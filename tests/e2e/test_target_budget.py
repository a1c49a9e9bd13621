"""Issue 47 through real ticks: a target's false-credit budget spans its runs.

The same change opened again as a new issue of the target is told the verdict the gate
gave it in the first run, and measured no more (no seeds, no pair job, no look); a run
admitted after the first holds a smaller share of the target's budget, recorded at its
admission, and its looks spend from that share."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop import alpha_budget
from outerloop.attempt.gate import plan_for
from outerloop.contract import load_contract_file
from outerloop.ledger.state import State
from tests.support import (
    EXAMPLE_TARGET,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e


def _script(path: Path, comment: str) -> Path:
    """An agent that appends ``comment`` to solver/tour.py (a change that moves nothing),
    submits, and stops at its next leg whatever it was told."""
    path.write_text(
        "legs:\n"
        f"  - - shell: \"printf '\\\\n# {comment}\\\\n' >> solver/tour.py\"\n"
        "    - write: {path: .outerloop/report.md, content: \"a comment\"}\n"
        "    - syscall: \"submit --report .outerloop/report.md\"\n"
        "    - syscall: sleep\n"
        "  - - syscall: \"stop --report .outerloop/report.md\"\n")
    return path


def _all_ended(count: int) -> object:
    def done(state: State) -> bool:
        return len(state.runs) == count and all(r.ended for r in state.runs.values())
    return done


def test_a_change_repeated_on_a_new_issue_is_told_its_verdict_and_a_later_run_spends_less(
        tmp_path: Path) -> None:
    script = _script(tmp_path / "comment.yaml", "tours are closed")
    settings = jobs_import_this_checkout(make_home(tmp_path, script))
    open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, _all_ended(1), timeout_s=300)  # type: ignore[arg-type]
    (first,) = state.runs.values()
    assert [v.verdict for v in first.verdicts] == ["no-improvement"]
    assert first.verdicts[0].change and first.alpha_fixed is not None

    open_issue(settings, "Shorter tours again", "Try anything on tour, once more.")
    state = tick_until(settings, _all_ended(2), timeout_s=300)  # type: ignore[arg-type]
    (second,) = [r for r in state.runs.values() if r.run_id != first.run_id]
    assert second.submissions == 0 and second.seeds == {} and second.verdicts == []
    assert not [j for j in state.jobs.values() if j.run == second.run_id
                and j.purpose == "eval"]  # no pair job
    prompts = sorted((settings.home / "runs" / second.run_id / "legs").glob("*-prompt.md"))
    told = prompts[1].read_text()
    assert f"this change repeats run {first.run_id}'s submission 1" in told
    assert "judged no-improvement" in told and "opened no pull request" in told
    assert second.alpha_fixed is not None and second.alpha_fixed.index == 2
    assert second.alpha_fixed.alpha < first.alpha_fixed.alpha

    _script(script, "a different comment")  # the next run's agent changes something else
    open_issue(settings, "Shorter tours, third", "Try something else on tour.")
    state = tick_until(settings, _all_ended(3), timeout_s=300)  # type: ignore[arg-type]
    (third,) = [r for r in state.runs.values() if r.run_id not in (first.run_id,
                                                                    second.run_id)]
    assert [v.verdict for v in third.verdicts] == ["no-improvement"]
    fixed = third.alpha_fixed
    assert fixed is not None and fixed.index >= 2 and fixed.alpha < first.alpha_fixed.alpha
    assert fixed.alpha == pytest.approx(fixed.budget * alpha_budget.share(fixed.index))
    (bench,) = [b for b in load_contract_file(EXAMPLE_TARGET / ".outerloop.yaml").benchmarks
                if b.name == third.benchmark]
    looks = third.looks[1]
    assert looks[0].alpha == pytest.approx(plan_for(bench, 1, fixed.alpha).alpha_at(0))
    assert looks[0].alpha < first.looks[1][0].alpha


def _notes_script(path: Path, notes: int) -> Path:
    """An agent that appends ``notes`` comment lines to solver/tour.py, submits, and
    stops at its next leg."""
    lines = "".join(f"# note {n} on tours\\\\n" for n in range(1, notes + 1))
    path.write_text(
        "legs:\n"
        f"  - - shell: \"printf '{lines}' >> solver/tour.py\"\n"
        "    - write: {path: .outerloop/report.md, content: \"notes\"}\n"
        "    - syscall: \"submit --report .outerloop/report.md\"\n"
        "    - syscall: sleep\n"
        "  - - syscall: \"stop --report .outerloop/report.md\"\n")
    return path


def test_a_near_identical_change_on_a_new_issue_is_told_which_run_it_repeats_and_costs_no_pairs(
        tmp_path: Path) -> None:
    """Issue 50 point 3: nine of ten changed lines the same (``NEAR_IDENTICAL``)."""
    script = _notes_script(tmp_path / "notes.yaml", 9)
    settings = jobs_import_this_checkout(make_home(tmp_path, script))
    open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, _all_ended(1), timeout_s=300)  # type: ignore[arg-type]
    (first,) = state.runs.values()
    assert [v.verdict for v in first.verdicts] == ["no-improvement"]

    _notes_script(script, 10)  # the same nine lines and one more
    open_issue(settings, "Shorter tours again", "Try anything on tour, once more.")
    state = tick_until(settings, _all_ended(2), timeout_s=300)  # type: ignore[arg-type]
    (second,) = [r for r in state.runs.values() if r.run_id != first.run_id]
    assert second.submissions == 0 and second.seeds == {} and second.verdicts == []
    assert not [j for j in state.jobs.values() if j.run == second.run_id
                and j.purpose == "eval"]
    prompts = sorted((settings.home / "runs" / second.run_id / "legs").glob("*-prompt.md"))
    told = prompts[1].read_text()
    assert f"this change repeats run {first.run_id}'s submission 1" in told
    assert "near-identical: about 90% of the changed lines are the same" in told
    assert "judged no-improvement" in told
