"""The gate pairs the novelty check saves on a target's history with repeats (issue 50
point 3), with the kernel's own code.

A target gets ``submissions`` submissions, each by another run. Each is one of:

- **new**: a fresh idea (a change of 3 to 30 lines to ``solver/tour.py``);
- **repeat**: an earlier idea again, whitespace reflowed (what seven runs re-finding
  2-opt looked like);
- **near**: an earlier idea with one line more (a comment, a log line);
- **tweak**: an earlier idea with one constant changed. Under ``NEAR_IDENTICAL`` (0.9)
  a tweak inside a change of about 20 lines or more is near-identical (two of its lines
  differ), so another run is told the earlier verdict; a tweak of a smaller change is
  measured. Within one run only an exact repeat is told, so an agent tunes in its own
  run (``change_sketch``).

Each submission's change key is made by the kernel's own reading of a change
(``change_key.changed_lines``, ``normalised``, ``change_sketch``), and looked up with
``History.judged_change`` over every earlier submission, all settled. A repeat or near
caught costs no pairs; the figure is the pair jobs (two per couple, order-balanced)
the first look of each caught submission would have run (``first_look_size`` of the
example target's benchmark): a floor, since a look can ask for more.

Printed: what was caught of each kind (a new idea caught would be a wrong catch; the
tweaks caught are the large ones),
the pair jobs saved, and the lookup's time per submission at the history's end.

    python bench/novelty.py [--submissions 400] [--seed 5]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from outerloop.attempt.change_key import changed_lines, normalised  # noqa: E402
from outerloop.attempt.looks import first_look_size  # noqa: E402
from outerloop.change_sketch import keyed, sketch  # noqa: E402
from outerloop.contract import load_contract_file  # noqa: E402
from outerloop.ledger.history import (  # noqa: E402
    History,
    Runs,
)
from outerloop.ledger.state import RunRecord  # noqa: E402

TARGET = "bench/tinytsp"
PATH = "solver/tour.py"
BASE = b"def tour(points):\n    return nearest(points)\n"
SALT = "benchmark\0tour\0base\0tree\0"
MIX = (("new", 0.4), ("repeat", 0.3), ("near", 0.15), ("tweak", 0.15))
WORDS = ("swap", "flip", "shift", "merge", "split", "probe", "relax", "sweep", "pick")


def idea(rng: random.Random) -> list[str]:
    """A fresh change: 3 to 30 lines of code."""
    return [f"    {rng.choice(WORDS)}_{rng.randrange(10**6)}(points, {rng.randrange(100)})"
            for _ in range(rng.randint(3, 30))] + [f"    LIMIT = {rng.randrange(10, 99)}"]


def variant(kind: str, lines: list[str], rng: random.Random) -> list[str]:
    if kind == "repeat":
        return [line.replace(", ", ",  ") + "  " for line in lines]
    if kind == "near":
        at = rng.randrange(len(lines) + 1)
        return [*lines[:at], f"    # note {rng.randrange(10**6)}", *lines[at:]]
    return [*lines[:-1], f"    LIMIT = {rng.randrange(100, 999)}"]  # tweak


def key_of(lines: list[str]) -> str:
    after = (b"def tour(points):\n" + "\n".join(lines).encode()
             + b"\n    return nearest(points)\n")
    exact = hashlib.sha256(SALT.encode() + normalised(after)).hexdigest()[:32]
    return keyed(exact, sketch(changed_lines(PATH, BASE, after), SALT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=400)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    (bench,) = [b for b in load_contract_file(
        REPO / "examples" / "tinytsp" / ".outerloop.yaml").benchmarks if b.name == "tour"]
    pair_jobs = 2 * first_look_size(bench)
    ideas: list[list[str]] = []
    runs: dict[str, RunRecord] = {}
    caught = {kind: 0 for kind, _ in MIX}
    made = {kind: 0 for kind, _ in MIX}
    last_lookup_s = 0.0
    for n in range(args.submissions):
        kind = rng.choices([k for k, _ in MIX], [w for _, w in MIX])[0] if ideas else "new"
        lines = idea(rng) if kind == "new" else variant(kind, rng.choice(ideas), rng)
        if kind == "new":
            ideas.append(lines)
        made[kind] += 1
        change = key_of(lines)
        started = time.perf_counter()
        found = History.of(Runs(runs), TARGET).judged_change(change, besides="")
        last_lookup_s = time.perf_counter() - started
        if found is not None:
            caught[kind] += 1
            continue
        run_id = f"tour-{n:05d}"
        runs[run_id] = RunRecord(run_id=run_id, target=TARGET, benchmark="tour",
                                 agent=f"agent-{n % 4 + 1:02d}", issue=n, issue_title="",
                                 hypothesis="", queued_at=f"2026-12-06T00:00:{n:06d}Z",
                                 judged_changes=[(change, 1, "no-improvement")])
    saved = (caught["repeat"] + caught["near"]) * pair_jobs
    spent = len(runs) * pair_jobs
    print(f"novelty: {args.submissions} submissions (seed {args.seed}), "
          f"first look {pair_jobs} pair jobs each")
    for kind, _ in MIX:
        wrong = {"new": " (would be wrong catches)",
                 "tweak": " (inside changes of about 20+ lines)"}.get(kind, "")
        print(f"  {kind:7s} {made[kind]:5d} made, {caught[kind]:5d} caught{wrong}")
    print(f"  pair jobs saved: {saved} of {saved + spent} "
          f"({saved / max(1, saved + spent):.0%}); measured {len(runs)} submissions")
    print(f"  lookup at the end of the history: {last_lookup_s * 1e3:.1f} ms "
          f"over {len(runs)} judged changes")


if __name__ == "__main__":
    main()
