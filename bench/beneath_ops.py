"""Cost of the kernel's no-follow file operations (``sandbox/beneath.py``).

Times a small read, an atomic replace and an append at a depth of four directories
(``.outerloop/results/<launch>/<task>/f``), plain ``open`` against ``beneath`` with
openat2 and with the ``O_NOFOLLOW`` descriptor walk it falls back to, and prints the
median microseconds per operation. The kernel does a few hundred of these per leg at
most. Nothing asserts.

    python bench/beneath_ops.py [runs]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from outerloop.atomic import write_atomic  # noqa: E402
from outerloop.sandbox import beneath  # noqa: E402

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
REL = ".outerloop/results/probe/0/f.json"


def median_us(action: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / REL).parent.mkdir(parents=True)
        (root / REL).write_bytes(b"{}\n")
        path = root / REL
        plain = {"read": lambda: path.read_bytes(),
                 "replace": lambda: write_atomic(path, b"{}\n"),
                 "append": lambda: open(path, "ab").close()}
        safe = {"read": lambda: beneath.read(root, REL, 4096),
                "replace": lambda: beneath.write(root, REL, b"{}\n"),
                "append": lambda: beneath.append(root, REL, b"")}
        rows = {name: [median_us(plain[name])] for name in plain}
        for mode in ("openat2", "walk"):
            beneath._state.clear()
            if mode == "walk":
                beneath._state["works"] = False
            for name in safe:
                rows[name].append(median_us(safe[name]))
        beneath._state.clear()
        (root / REL).write_bytes(b"{}\n")
        print(f"median of {RUNS}, microseconds per operation, {REL!r} "
              f"(openat2 here: {bool(beneath._syscall())}, pid {os.getpid()})")
        print(f"{'op':<8} {'plain':>8} {'openat2':>8} {'walk':>8}")
        for name, (p, a, w) in rows.items():
            print(f"{name:<8} {p:>8.1f} {a:>8.1f} {w:>8.1f}")


if __name__ == "__main__":
    main()
