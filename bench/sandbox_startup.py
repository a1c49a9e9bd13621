"""Added start-up time of a sandboxed child, per backend.

Starts the same short children plain and under each backend that works here
(``landlock``: the ``python -I -S`` exec wrapper; ``bwrap``: bubblewrap with the same
grants a session gets) and prints the median wall time of each and the difference.
Target: <= 50 ms added per sandboxed start. Nothing asserts.

    python bench/sandbox_startup.py [runs]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
TARGET_MS = 50.0
CHILDREN = {"/bin/true": ["/bin/true"], "python -c pass": [sys.executable, "-c", "pass"],
            "node -e 0": ["node", "-e", "0"]}


def median_ms(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    from outerloop.sandbox import Confinement
    from outerloop.sandbox.bwrap import BwrapSandbox
    from outerloop.sandbox.landlock import LandlockSandbox
    from outerloop.sandbox.resolve import bwrap_problem, landlock_problem

    backends = {"landlock": (LandlockSandbox(), landlock_problem()),
                "bwrap": (BwrapSandbox(), bwrap_problem())}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        ws, scratch = home / "runs" / "r" / "ws", home / "runs" / "r" / "home"
        ws.mkdir(parents=True)
        scratch.mkdir()
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch), "LANG": "C.UTF-8"}
        print(f"sandbox start-up, median of {RUNS} runs (target: <= {TARGET_MS:g} ms added)")
        print(f"{'child':<16} {'backend':<9} {'plain ms':>9} {'sandboxed ms':>13} {'added ms':>9}")
        for name, argv in CHILDREN.items():
            try:
                plain = median_ms(argv, env, ws)
            except (OSError, subprocess.CalledProcessError):
                print(f"{name:<16} (not runnable here)")
                continue
            for kind, (sandbox, problem) in backends.items():
                if problem:
                    print(f"{name:<16} {kind:<9} unavailable: {problem}")
                    continue
                confined, child_env = Confinement(sandbox=sandbox, home=home).command(
                    argv, env, workdir=ws, scratch=scratch)
                boxed = median_ms(confined, child_env, ws)
                verdict = "ok" if boxed - plain <= TARGET_MS else "OVER"
                print(f"{name:<16} {kind:<9} {plain:>9.1f} {boxed:>13.1f} "
                      f"{boxed - plain:>9.1f}  {verdict}")


if __name__ == "__main__":
    main()
