"""tinytsp's trusted scorer: the mean length of the tours the command wrote.

Usage: ``OUTERLOOP_OUTPUTS=<bench>.json python score.py --bench tour|spread [--json]``.
outerloop runs it from the root of a fresh checkout of the *base* tree, in its own
sandboxed process, after the benchmark command wrote ``out/<bench>.json`` and outerloop
copied it out. It regenerates the instances from ``TINYTSP_SEED`` (public inputs: no
hidden truth here), checks every tour and prints the metric line, as the last line:
``{"mean_tour_length": 7.501848, "instances": 25}``.

The tours are the candidate's output, so they are read as data only: bounded JSON,
never imported or executed. A tour that is not a permutation of its instance's points,
a missing tour or a malformed file is an error (exit 1, no metric): the gate counts it
as a failed evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from instances import BENCHES, INSTANCES, check_tour, instances, read_seed, tour_length

OUTPUTS_ENV = "OUTERLOOP_OUTPUTS"
MAX_TOURS_BYTES = 1024 * 1024


def read_tours(path: Path) -> list[object]:
    """The list of tours in the candidate's file; exit 1 saying why when there is none."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_TOURS_BYTES + 1)
        if len(data) > MAX_TOURS_BYTES:
            raise ValueError(f"larger than {MAX_TOURS_BYTES} bytes")
        tours = json.loads(data.decode("utf-8"))["tours"]
        if not isinstance(tours, list) or len(tours) != INSTANCES:
            raise ValueError(f"'tours' must be a list of {INSTANCES} tours")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        print(f"score.py: {path.name}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    return tours


def mean_length(bench: str, seed: int, tours: list[object]) -> float:
    """The mean length of ``tours`` over the bench's instances, rounded to 6 decimals."""
    lengths = [tour_length(points, check_tour(tour, len(points)))
               for points, tour in zip(instances(bench, seed), tours, strict=True)]
    return round(sum(lengths) / len(lengths), 6)


def result_line(bench: str, mean: float, as_json: bool) -> str:
    metric, _ = BENCHES[bench]
    return json.dumps({metric: mean, "instances": INSTANCES}) if as_json else f"{metric}: {mean}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tinytsp: score the tours")
    parser.add_argument("--bench", choices=sorted(BENCHES), default="tour")
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON object on the last line")
    args = parser.parse_args(argv)
    outputs = os.environ.get(OUTPUTS_ENV)
    if not outputs:
        print(f"score.py: {OUTPUTS_ENV} is not set", file=sys.stderr)
        return 2
    tours = read_tours(Path(outputs))
    print(result_line(args.bench, mean_length(args.bench, read_seed(), tours), args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
