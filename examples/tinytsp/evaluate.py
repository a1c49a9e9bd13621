"""tinytsp in one process: solve and measure, to try a solver in a workspace.

Usage: ``python evaluate.py --bench tour|spread [--json]``. The seed comes from
``TINYTSP_SEED`` (default 1). Progress goes to stdout first; the last stdout line is
the result (one JSON object with ``--json``), as the trusted scorer prints it.

This is **not** how outerloop measures the benchmark: the gate runs ``produce.py`` (the
solver writes its tours) and then ``score.py`` from the base tree in a separate
process, so the solver never runs in the process that prints the number
(``.outerloop.yaml``). Here it does, which is fine for trying a solver, never for
judging one.

Benchmarks:
  tour    25 instances of 60 points uniform in the unit square;
          metric ``mean_tour_length`` (lower is better).
  spread  25 instances of 60 points spread over 5 tight clusters;
          metric ``mean_spread_length`` (lower is better).
"""

from __future__ import annotations

import argparse
import time

from instances import BENCHES, INSTANCES, POINTS, instances, read_seed
from score import mean_length, result_line
from solver import solve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tinytsp benchmark, in one process")
    parser.add_argument("--bench", choices=sorted(BENCHES), default="tour")
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON object on the last line")
    args = parser.parse_args(argv)
    seed = read_seed()
    print(f"tinytsp: bench {args.bench}, {INSTANCES} instances of {POINTS} points",
          flush=True)
    started = time.perf_counter()
    tours: list[object] = [solve(list(points)) for points in instances(args.bench, seed)]
    mean = mean_length(args.bench, seed, tours)
    print(f"solved {INSTANCES} instances in {time.perf_counter() - started:.2f} s",
          flush=True)
    print(result_line(args.bench, mean, args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
