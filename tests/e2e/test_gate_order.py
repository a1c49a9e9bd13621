"""Order-balanced pairs through real ticks (issue 47, point 3): a benchmark that favours
whichever side runs second in its pair job gives a null change no gain and no credit,
while a real gain is credited and its PR shows the order effect.

The benchmark is examples/tinytsp's ``tour`` (deterministic given the seed) piped
through ``order_effect.py``, which lowers the tour length by ``ORDER_EFFECT`` when the
side runs second in its job. What tells it so is what a side honestly sees of its place:
its checkout is the job's slot ``1`` (``trees/<job>/1``, ``attempt/pairs.py``), the
slot of whichever side runs second, base or candidate alike. The gate shares no state
between the sides, so a real warm cache cannot be grown in a test; the slot stands in
for it, with the same effect on the numbers: the second side measures better.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tests.e2e.explain_check import check_explained
from tests.support import (
    TARGET,
    ended,
    eval_sides,
    forge,
    in_process_target,
    in_review,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e

ORDER_EFFECT = Decimal("1.5")
"""How much shorter the tour reads when its side runs second: more than 2-opt's gain
(about 1.1), far more than a couple's noise (the seed moves both sides alike)."""
ORDER_SCRIPT = f'''"""Test only: a timed benchmark's order effect. The side run second in
its pair job (its checkout is the job's slot 1) measures {ORDER_EFFECT} better."""
import json
import os
import sys
from decimal import Decimal

SECOND = os.path.basename(os.getcwd()) == "1"
for line in sys.stdin:
    try:
        data = json.loads(line, parse_float=Decimal)
    except ValueError:
        print(line, end="")
        continue
    value = data["mean_tour_length"] - (Decimal("{ORDER_EFFECT}") if SECOND else 0)
    print('{{"mean_tour_length": ' + str(value) + '}}')
'''


def order_effect_target(tmp_path: Path) -> Path:
    """examples/tinytsp whose ``tour`` reads ``ORDER_EFFECT`` shorter on the second side
    (``order_effect.py`` is outside the agent's scope)."""
    target = tmp_path / "target"
    in_process_target(target)
    (target / "order_effect.py").write_text(ORDER_SCRIPT)
    contract = target / ".outerloop.yaml"
    text = contract.read_text()
    old = "command: python evaluate.py --bench tour --json"
    assert old in text
    contract.write_text(text.replace(old, old + " | python order_effect.py", 1))
    return target


def test_a_null_change_gains_nothing_from_running_second_when_the_benchmark_favours_it(
        tmp_path: Path) -> None:
    """A comment-only change: every couple's two gains are +e and -e, its unit exactly
    0, so the verdict is no-improvement with a gain of exactly 0 (pairs alone, in drawn
    orders, would read +-e/3 or more at three pairs) and the order effect on record."""
    settings = make_home(tmp_path, "tinytsp-noop.yaml",
                         target_dir=order_effect_target(tmp_path))
    open_issue(settings, "Shorter tours", "Try anything on tour.")
    state = tick_until(settings, ended, timeout_s=300)
    (run,) = state.runs.values()
    (verdict,) = run.verdicts
    assert verdict.verdict == "no-improvement", verdict.detail
    assert verdict.delta is not None and Decimal(verdict.delta) == 0, verdict.detail
    assert verdict.order is not None and Decimal(verdict.order) == ORDER_EFFECT
    sides = eval_sides(settings, state, run.run_id)
    seconds = [side for side in sides if side.dir.name == "1"]
    assert {side.role for side in seconds} == {"base", "cand"}  # each order once a couple
    assert len(seconds) == 2 * verdict.seeds and run.pr_number is None
    assert forge(settings).list_prs(TARGET, "all") == []
    (told,) = [d for d in check_explained(settings.home, run.run_id)
               if d["decision"] == "verdict"]
    assert "order effect 1.5" in str(told["reason"])


def test_a_real_gain_is_credited_through_the_order_effect_and_the_pr_shows_it(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, target_dir=order_effect_target(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, in_review, timeout_s=300)
    (run,) = state.runs.values()
    (verdict,) = run.verdicts
    assert verdict.verdict == "improved", verdict.detail
    assert verdict.order is not None and Decimal(verdict.order) == ORDER_EFFECT
    assert verdict.delta is not None and Decimal("0.5") < Decimal(verdict.delta) < 2
    (pr,) = forge(settings).list_prs(TARGET, "all")
    measured = pr.body.split("## Measured")[1].split("## Experiments")[0]
    assert "- order effect: `1.5` (interval `1.5` to `1.5`)" in measured
    assert "a side measured when it ran second in its job" in measured
    assert f"- pairs: {verdict.seeds} couples, {2 * verdict.seeds} pair jobs" in measured
