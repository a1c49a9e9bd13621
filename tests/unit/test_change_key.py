"""A submission's change key (outerloop/attempt/change_key.py, issue 47): whitespace that
does not move code does not make a new change; indentation and content do. The PR shows
what the target's false-credit budget held for the run (credit.budget_view)."""

from __future__ import annotations

from outerloop.attempt.change_key import normalised
from outerloop.attempt.credit import budget_view
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord
from outerloop.run.render import render_pr_body
from tests.unit.test_render import pr_inputs

CODE = b"def tour(points):\n    return sorted(points)\n"


def test_whitespace_that_does_not_move_code_keeps_the_same_change() -> None:
    for variant in (b"def tour(points):  \r\n\n    return  sorted(points)\n\n",
                    b"def  tour(points):\n    return\tsorted(points)",
                    b"def tour(points):\n\treturn sorted(points)\n".replace(b"\t", b"    ")):
        assert normalised(variant) == normalised(CODE), variant


def test_indentation_and_content_make_another_change() -> None:
    assert normalised(b"def tour(points):\nreturn sorted(points)\n") != normalised(CODE)
    assert normalised(CODE.replace(b"sorted", b"reversed")) != normalised(CODE)
    assert normalised(b"\xff\xfe  binary") == b"\xff\xfe  binary"  # not UTF-8: as is


def test_the_pr_shows_the_runs_share_of_the_targets_budget_when_it_has_one() -> None:
    run = RunRecord(run_id="r", target="o/n", benchmark="tour", agent="a", issue=1,
                    issue_title="", hypothesis="", queued_at="")
    assert budget_view(run) is None  # admitted before shares: no line
    run.alpha_fixed = ev.RunAlpha(alpha=0.00051, budget=0.01, index=4, held=0.0059)
    body = render_pr_body(pr_inputs(budget=budget_view(run)))
    assert ("false-credit budget: this run may spend alpha `0.00051` over all its "
            "submissions") in body
    assert ("its share as the target's run 4 holding one, of the target's `0.01` over all "
            "its runs") in body
    assert "earlier runs held `0.0059`" in body
    assert "over the whole run" not in body  # the contract's per-run figure is not the run's
    plain = render_pr_body(pr_inputs())
    assert "false-credit budget:" not in plain
