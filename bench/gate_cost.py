"""What honest measurement costs per credited candidate (issues 20 and 21).

Runs the example target (tinytsp, the scripted 2-opt agent, local compute, the
approving judge) to a ready pull request ``RUNS`` times and reads, from the run's job
files and ledger:

- the eval jobs it took: one pair job per pair of the sequential test (issue 21: at
  least 3; issue 20 had one pair and one confirmation pair, before it two jobs per seed);
- the looks the sequential test took (each one more park and wake);
- the one-after-the-other cost: each pair's wall time against the time its longer side
  alone took (what the pair cost when both sides ran at the same time);
- from the verdict to the publish: the review's wait.

Prints the figures; nothing asserts.

    python bench/gate_cost.py [runs]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 2


def _seconds(path: Path) -> float:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return 0.0


def one_run(tmp: Path) -> dict[str, float]:
    from outerloop.attempt import pairs
    from outerloop.clock import parse_stamp
    from outerloop.run.paths import RunPaths
    from tests.support import in_review, make_home, open_issue, state_of, tick_until

    settings = make_home(tmp)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    started = time.monotonic()
    state = tick_until(settings, in_review, timeout_s=600)
    total = time.monotonic() - started
    (run,) = state.runs.values()
    paths = RunPaths.of(settings.home, run.run_id)
    evals = [j for j in state.jobs.values() if j.run == run.run_id and j.purpose == "eval"]
    sequential = concurrent = 0.0
    for job in evals:
        plan = pairs.read_plan(paths, job.name)
        assert plan is not None
        sides = [_seconds(pairs.side_dir(paths, job.name, slot) / "elapsed_s")
                 for slot in range(len(plan.sides))]
        sequential += sum(sides)
        concurrent += max(sides)
    ledger = state_of(settings).runs[run.run_id]
    verdict_at = parse_stamp(ledger.verdicts[-1].at) if ledger.verdicts else None
    publish = ledger.publish
    confirm_s = (parse_stamp(publish.at) - verdict_at).total_seconds() \
        if publish is not None and verdict_at is not None else 0.0
    return {"eval_jobs": len(evals), "looks": len(ledger.looks.get(1, [])),
            "sides_sequential_s": sequential,
            "sides_concurrent_s": concurrent, "confirm_wait_s": confirm_s,
            "issue_to_review_s": total}


def main() -> None:
    rows = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory(prefix="gate-cost-") as tmp:
            rows.append(one_run(Path(tmp)))
    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)
    print(f"gate cost per credited candidate (tinytsp, repeats 1, local compute, "
          f"median of {RUNS} runs)")
    print(f"  eval jobs:                         {med('eval_jobs'):.0f} "
          f"(issue 20: 1 pair + 1 confirmation = 2; before it 2 per seed = 2)")
    print(f"  looks of the sequential test:      {med('looks'):.0f}")
    print(f"  sides one after the other:         {med('sides_sequential_s'):.2f} s of side "
          f"time; at the same time it would be {med('sides_concurrent_s'):.2f} s "
          f"(+{med('sides_sequential_s') - med('sides_concurrent_s'):.2f} s)")
    print(f"  verdict -> publish (the review):   {med('confirm_wait_s'):.1f} s")
    print(f"  issue -> PR in review, all told:   {med('issue_to_review_s'):.1f} s")


if __name__ == "__main__":
    main()
