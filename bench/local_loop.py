"""Issue to pull request with `outerloop start --mode local` on the demo target.

Builds a home with the example target (examples/tinytsp) and the scripted 2-opt agent,
opens an issue, starts the local loop with the default cadence (10 minutes) and prints
how long the first pull request took to appear. Target: <= 2 minutes (the loop wakes
when a local job ends, and ticks at least every 30 s while jobs are live). Nothing
asserts.

    python bench/local_loop.py
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
LIMIT_S = 600


def main() -> int:
    from tests.support import TARGET, forge, make_home, open_issue

    with tempfile.TemporaryDirectory(prefix="local-loop-") as tmp:
        settings = make_home(Path(tmp))
        open_issue(settings, "Shorter tours", "Please try local search on tour.")
        started = time.monotonic()
        loop = subprocess.Popen([sys.executable, "-m", "outerloop", "start", "--home",
                                 str(settings.home), "--mode", "local"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not forge(settings).list_prs(TARGET, "all"):
                if time.monotonic() - started > LIMIT_S or loop.poll() is not None:
                    print("no pull request (the loop stopped or took over 10 minutes)")
                    return 1
                time.sleep(0.5)
            took = time.monotonic() - started
        finally:
            loop.send_signal(signal.SIGINT)
            loop.wait(timeout=60)
    print(f"issue to pull request with start --mode local: {took:.1f} s "
          f"(target <= 120 s: {'met' if took <= 120 else 'missed'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
