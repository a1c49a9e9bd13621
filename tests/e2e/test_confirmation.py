"""No credit rests on one job: a gain that one pair job shows and the next ones do not
is not credited (issue 20 asked for a confirmation pair; issue 21's sequential test
measures at least 3 fresh pair jobs and more while it is unsure). Through real ticks on
the local forge with a judge that always approves."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from tests.support import (
    AGENTS,
    TARGET,
    eval_sides,
    forge,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e

LUCKY_ONCE_SECONDS = 40
"""The candidate is 2-opt only until this long after its session wrote it, and then
sleeps past it: the first pair measures 2-opt, every later pair nearest neighbour."""


def _lucky_once_agent(tmp_path: Path) -> Path:
    solver = (AGENTS / "tinytsp-2opt.yaml").read_text().split("        content: |\n", 1)[1]
    solver = solver.split("    - shell:", 1)[0]
    two_opt = solver.replace('def solve(points: list[Point]) -> list[int]:',
                             'def _better(points: list[Point]) -> list[int]:')
    lucky = (
        "            import pathlib\n"
        "            import time\n\n"
        "            _UNTIL = float((pathlib.Path(__file__).parent / 'until.txt').read_text())\n"
        "            _LUCKY = time.time() < _UNTIL\n"
        f"            _NAP = {LUCKY_ONCE_SECONDS + 5}\n\n\n"
        "            def solve(points: list[Point]) -> list[int]:\n"
        "                if _LUCKY:\n"
        "                    return _better(points)\n"
        "                return nearest_neighbour(points)\n\n\n"
        "            if _LUCKY:\n"
        "                time.sleep(_NAP)\n")
    agent = tmp_path / "lucky-once.yaml"
    agent.write_text(
        "legs:\n"
        "  - - write:\n"
        "        path: solver/tour.py\n"
        "        content: |\n" + two_opt + lucky +
        f"    - shell: \"python3 -c 'import time; print(time.time() + {LUCKY_ONCE_SECONDS})' "
        "> solver/until.txt\"\n"
        "    - write: {path: report.md, content: \"2-opt after nearest neighbour.\"}\n"
        "    - syscall: \"submit --report report.md\"\n"
        "    - syscall: sleep\n"
        "  - - expect: \"no-improvement\"\n"
        "    - syscall: \"stop --report report.md\"\n")
    return agent


def test_a_gain_that_holds_in_one_pair_only_is_not_credited_and_the_agent_is_told(
        tmp_path: Path) -> None:
    """The first pair job measures 2-opt, every later one nearest neighbour: one lucky
    job (before issue 21 it was credited, then caught by the confirmation pair) now buys
    nothing. The sequential test looks again and again and stops; no PR opens."""
    settings = make_home(tmp_path, _lucky_once_agent(tmp_path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    legs_dir = settings.home / "runs"

    def told(_state: object) -> bool:
        return any("no-improvement" in p.read_text()
                   for p in legs_dir.glob("*/legs/*-prompt.md"))

    state = tick_until(settings, told, timeout_s=400)
    (run,) = state.runs.values()
    (verdict,) = run.verdicts
    assert verdict.verdict == "no-improvement", verdict.detail
    looks = run.looks[1]
    assert len(looks) >= 2 and looks[0].decision == "more"  # one great pair: not sure yet
    first = [Decimal(b) - Decimal(c) for b, c in looks[0].pairs]
    assert max(first) > Decimal("0.5") and min(first) == 0  # the lucky pair, then none
    assert 2 * verdict.seeds == sum(len(seen.pairs) for seen in looks)  # couples
    seeds = [side.seed for side in eval_sides(settings, state, run.run_id)
             if side.role == "base"]
    # each couple's two pair jobs share its seed; every couple's is fresh
    assert len(seeds) == 2 * verdict.seeds and len(set(seeds)) == verdict.seeds
    assert seeds[::2] == seeds[1::2]
    assert run.sleeps == 1  # the later looks measured more without spending a sleep
    assert forge(settings).list_prs(TARGET, "all") == []
    shown = CliRunner().invoke(cli_main, ["status", "--json", "--home", str(settings.home)])
    gate = json.loads(shown.output)["runs"][0]["gate"]
    assert gate["credited"] is False
    assert gate["submissions"][0]["pairs"] == verdict.seeds
