"""tinytsp's benchmark command: solve the instances, write the tours.

Usage: ``python produce.py --bench tour|spread``. Solves the bench's instances (from
``TINYTSP_SEED``) with ``solver.solve`` and writes the tours to ``out/<bench>.json``
(``{"tours": [[...], ...]}``), with a one-line summary on stdout and no metric: the
trusted scorer (``score.py``, run by outerloop from the base tree in a process of its
own) reads the tours as data, checks and measures them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from instances import BENCHES, instances, read_seed
from solver import solve

OUT = Path("out")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tinytsp: solve, write the tours")
    parser.add_argument("--bench", choices=sorted(BENCHES), default="tour")
    args = parser.parse_args(argv)
    tours = [list(solve(list(points))) for points in instances(args.bench, read_seed())]
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.bench}.json").write_text(json.dumps({"tours": tours}) + "\n",
                                            encoding="utf-8")
    print(f"tinytsp: wrote {len(tours)} tours to {OUT / args.bench}.json", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
