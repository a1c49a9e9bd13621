"""What the environment-trap check costs (``harness/needs.py``, ``sandbox/traps.py``).

Times, in a throwaway home with the scripted harness and each working backend: the full
check (every needed command started confined, interpreters also unconfined) as doctor
and the attempt job run it before a run's first leg, and the tick's cached path (one
fingerprint compare) that every tick after a proved one takes. Prints medians; nothing
asserts.

    python bench/environment_check.py [runs]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 10

from outerloop.config import Settings  # noqa: E402  (after the path insert)


def median_ms(fn: Callable[[Settings], object], settings: Settings, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(settings)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    from outerloop.config import load_settings
    from outerloop.harness.needs import (
        children_path,
        environment_traps,
        needed_commands,
        tick_notes,
    )
    from outerloop.home import init_home
    from outerloop.sandbox.resolve import bwrap_problem, landlock_problem

    with tempfile.TemporaryDirectory() as tmp:
        for kind, problem in (("landlock", landlock_problem), ("bwrap", bwrap_problem)):
            if problem() is not None:
                print(f"{kind}: cannot start here ({problem()})")
                continue
            home = Path(tmp) / kind
            init_home(home, forge="local", compute="local", harness="scripted",
                      targets=["demo/x"], script="/dev/null", judge_script=None)
            with (home / "outerloop.toml").open("a") as handle:
                handle.write(f'\n[sandbox]\nkind = "{kind}"\n')
            settings = load_settings(home)
            names = [n.what for n in needed_commands(settings, children_path())]
            full = median_ms(environment_traps, settings, RUNS)
            traps = environment_traps(settings)
            tick_notes(settings)
            cached = median_ms(tick_notes, settings, RUNS)
            print(f"{kind}: {len(names)} commands ({', '.join(names)}); full check "
                  f"{full:.0f} ms, cached tick {cached:.2f} ms"
                  + (f"; traps: {len(traps)} (proved again every tick)" if traps else ""))


if __name__ == "__main__":
    main()
