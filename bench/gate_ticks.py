"""The sequential gate through real ticks (issue 21): fishing runs and gain runs.

One home on local compute with the noisy example target (examples/tinysgd) and the
scripted agents of tests/e2e/test_gate_fishing.py: ``FISHING`` runs of
``tinysgd-null.yaml`` (eight RNG-shift nulls, each submitted after the last was not
credited) and ``GAIN`` runs of the gain agent (30 epochs instead of 3, about 3.5 paired
standard deviations), all at the contract's default confidence (0.99), each run its own
issue, up to ``PARALLEL`` at once. Prints, per kind: runs credited, submissions, pairs
(= eval jobs) per submission, and the wall time; nothing asserts.

    python bench/gate_ticks.py [--fishing 20] [--gain 3] [--parallel 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _contract_parallel(target: Path, parallel: int) -> None:
    contract = target / ".outerloop.yaml"
    text = contract.read_text()
    contract.write_text(text.replace("max_active_attempts: 1",
                                     f"max_active_attempts: {parallel}"))


def _verdicts(settings: object, run_id: str) -> list[object]:
    from outerloop.ledger import events as ev
    from outerloop.ledger.book import decode_lines, run_file
    from tests.support import TARGET

    path = run_file(settings.home, TARGET, run_id)  # type: ignore[attr-defined]
    events, _ = decode_lines(path.read_bytes().splitlines())
    return [e for e in events if isinstance(e, ev.Verdict)]


def run_kind(tmp: Path, kind: str, runs: int, parallel: int) -> dict[str, object]:
    from tests.e2e.test_gate_fishing import gain_agent, tinysgd_target
    from tests.support import ended, make_home, open_issue, tick_until

    target = tinysgd_target(tmp)
    _contract_parallel(target, parallel)
    agent = "tinysgd-null.yaml" if kind == "fishing" else gain_agent(tmp, epochs=30)
    settings = make_home(tmp, agent, target_dir=target)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace("max_new_runs_per_tick = 1",
                                                 f"max_new_runs_per_tick = {parallel}"))
    for number in range(runs):
        open_issue(settings, f"Lower test loss {number}", "Train the model better.")
    started = time.monotonic()

    def settled(state: object) -> bool:
        records = list(state.runs.values())  # type: ignore[attr-defined]
        if len(records) < runs:
            return False
        if kind == "fishing":
            return ended(state)  # type: ignore[arg-type]
        return all(r.ended or r.park_reason == "review" for r in records)

    state = tick_until(settings, settled, timeout_s=7200, pause_s=0.5)
    wall = time.monotonic() - started
    records = list(state.runs.values())
    # from the ledger itself: a settled run's record keeps only its credited verdicts
    verdicts = [event for r in records for event in _verdicts(settings, r.run_id)]
    return {
        "runs": len(records),
        "credited": sum(any(v.verdict == "improved" for v in r.verdicts) for r in records),
        "submissions": len(verdicts),
        "pairs_per_submission": statistics.mean(v.seeds for v in verdicts)  # type: ignore[attr-defined]
        if verdicts else 0,
        "pairs_max": max((v.seeds for v in verdicts), default=0),  # type: ignore[attr-defined]
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fishing", type=int, default=20)
    parser.add_argument("--gain", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=10)
    args = parser.parse_args()
    for kind, runs in (("fishing", args.fishing), ("gain", args.gain)):
        if runs <= 0:
            continue
        with tempfile.TemporaryDirectory(prefix=f"gate-ticks-{kind}-") as tmp:
            row = run_kind(Path(tmp), kind, runs, args.parallel)
        print(f"{kind}: {row['credited']}/{row['runs']} runs credited, "
              f"{row['submissions']} submissions, "
              f"{row['pairs_per_submission']:.2f} pairs per submission "
              f"(max {row['pairs_max']}), {row['wall_s']:.0f} s through real ticks")


if __name__ == "__main__":
    main()
