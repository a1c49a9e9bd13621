"""The tamper check's cost: a large candidate diff against a large base tree.

Builds a unified diff adding 20,000 lines over 200 files (ordinary solver code, with a
few tampering lines mixed in) and a base of 5,000 tracked files, 2,000 of them Python
outside the scope, then times ``tamper.scan_diff``, ``tamper.scan_candidate`` (the AST
analysis of 200 changed files) and ``tamper.check_output`` on a 1 MiB stdout. Prints
the wall times and the findings counted. Budget: well under a second for the line scan,
a few seconds for the analysis (each runs once per credited submission). Nothing
asserts.

    python bench/tamper_scan.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FILES = 200
LINES_PER_FILE = 100
TRACKED = 5_000
OUTSIDE_PY = 2_000


def main() -> None:
    from outerloop.attempt.tamper import ChangedFile, check_output, scan_candidate, scan_diff
    from outerloop.contract import load_contract_text

    contract = load_contract_text("""
benchmarks:
  - {name: tour, command: python evaluate.py --json, metric: mean_tour_length,
     direction: min, seed_env: TINYTSP_SEED}
budgets: {gpu_hours_per_run: 0, runs_per_week: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")
    tracked = [f"tools/pkg{i // 50}/mod{i}.py" for i in range(OUTSIDE_PY)]
    tracked += [f"solver/part{i}.py" for i in range(TRACKED - OUTSIDE_PY)]
    chunks = []
    for f in range(FILES):
        body = [f"    value_{i} = math.dist(points[{i}], points[{i} + 1]) * weight"
                for i in range(LINES_PER_FILE)]
        if f % 50 == 0:
            body[7] = "import atexit"
        chunks.append(f"diff --git a/solver/f{f}.py b/solver/f{f}.py\n--- a/solver/f{f}.py\n"
                      f"+++ b/solver/f{f}.py\n@@ -0,0 +1,{LINES_PER_FILE} @@\n"
                      + "".join(f"+{line}\n" for line in body))
    diff = "".join(chunks)
    started = time.perf_counter()
    findings = scan_diff(diff, contract.benchmarks[0], contract, tracked)
    scan_s = time.perf_counter() - started
    files = [ChangedFile(f"solver/f{f}.py", (
        "import math\n\n\ndef f(points, weight):\n"
        + "".join(f"    value_{i} = math.dist(points[{i}], points[{i} + 1]) * weight\n"
                  for i in range(LINES_PER_FILE))
        + ("import atexit\n" if f % 50 == 0 else "")).encode()) for f in range(FILES)]
    started = time.perf_counter()
    analysed = scan_candidate(files, "", contract.benchmarks[0], contract, tracked)
    ast_s = time.perf_counter() - started
    stdout = "progress line\n" * (1024 * 1024 // 14) + '{"mean_tour_length": 6.5}\n'
    started = time.perf_counter()
    output = check_output([stdout] * 3, "mean_tour_length")
    output_s = time.perf_counter() - started
    print(f"scan_diff: {FILES * LINES_PER_FILE} added lines, {len(tracked)} tracked files "
          f"({OUTSIDE_PY} outside scope): {scan_s * 1000:.0f} ms, {len(findings)} findings")
    print(f"scan_candidate: {FILES} Python files of {LINES_PER_FILE} lines, parsed and "
          f"analysed: {ast_s * 1000:.0f} ms, {len(analysed)} findings")
    print(f"check_output: 3 x {len(stdout) // 1024} KiB stdout: {output_s * 1000:.0f} ms, "
          f"{len(output)} findings")


if __name__ == "__main__":
    main()
