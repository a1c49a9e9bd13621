"""Added start-up time of a sandboxed child, per backend.

Starts the same short children plain and under each backend that works here
(``landlock``: the ``python -I -S`` exec wrapper; ``bwrap``: bubblewrap with the same
grants a session gets) and prints the median wall time of each and the difference.
Target: <= 50 ms added per sandboxed start. Nothing asserts.

As root it also prints, per backend, a child that stays root with its capabilities
dropped (before issue 46) against one that runs as the unprivileged child user (now:
``[sandbox] child_user``, default nobody), started alternately so load hits both alike
(target: within 10 ms), and what handing a workspace to that user costs
(``sandbox/handover.py``: a first handover of 10,000 files, and again once they are
the user's, as from the second leg on).

    python bench/sandbox_startup.py [runs]
"""

from __future__ import annotations

import dataclasses
import os
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


def alternating_ms(first: list[str], second: list[str], env_first: dict[str, str],
                   env_second: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Medians of two commands started one after the other, RUNS times each."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(RUNS):
        for argv, env, out in ((first, env_first, times[0]), (second, env_second, times[1])):
            started = time.perf_counter()
            subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            out.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def as_child_user(backends: dict[str, tuple[object, str | None]], home: Path, ws: Path,
                  scratch: Path, env: dict[str, str]) -> None:
    """Root only: caps dropped but uid 0 (before) against the child user (now)."""
    from outerloop.sandbox import Confinement
    from outerloop.sandbox.uid import child_ids, describe

    user = child_ids(None)
    print(f"\nas root: child stays uid 0, caps dropped (before) vs runs as {describe(user)} "
          f"(now), alternating, median of {RUNS} (target: within 10 ms)")
    print(f"{'child':<16} {'backend':<9} {'root ms':>9} {'child user ms':>14} {'added ms':>9}")
    for name, argv in CHILDREN.items():
        if name.startswith("node"):
            continue
        for kind, (sandbox, problem) in backends.items():
            if problem:
                continue
            now = Confinement(sandbox=sandbox, home=home)  # type: ignore[arg-type]
            before = dataclasses.replace(now, user=None)
            old, old_env = before.command(argv, env, workdir=ws, scratch=scratch)
            new, new_env = now.command(argv, env, workdir=ws, scratch=scratch)
            root_ms, user_ms = alternating_ms(old, new, old_env, new_env, ws)
            verdict = "ok" if user_ms - root_ms <= 10 else "OVER"
            print(f"{name:<16} {kind:<9} {root_ms:>9.1f} {user_ms:>14.1f} "
                  f"{user_ms - root_ms:>9.1f}  {verdict}")
    handover_ms(user or (65534, 65534))


def handover_ms(user: tuple[int, int]) -> None:
    from outerloop.sandbox.handover import hand_over

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        for i in range(100):
            sub = ws / f"d{i}"
            sub.mkdir(parents=True)
            for j in range(100):
                (sub / f"f{j}.py").write_bytes(b"x")
        for label in ("first (10,000 root-owned files)", "again (already the user's)"):
            started = time.perf_counter()
            hand_over([str(ws)], *user)
            print(f"handover of a workspace, {label}: "
                  f"{(time.perf_counter() - started) * 1000:.1f} ms")


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
        if os.geteuid() == 0:
            as_child_user(backends, home, ws, scratch, env)


if __name__ == "__main__":
    main()
