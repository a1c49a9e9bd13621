"""Through real ticks (a run improves and waits for its reviewer): the tick after the
one that published the research-log record folds only that tick's own events, which
change no board, so it renders none (no jinja2 imported, ``board/`` untouched) and plans
nothing (``board_memo.py``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.support import in_review, make_home, open_issue, state_of

TICK = ("import atexit, sys\n"
        "atexit.register(lambda: print('jinja2' in sys.modules, file=sys.stderr))\n"
        "from outerloop.cli import entry\n"
        "entry(sys.argv[1:])\n")


def _tick(home: Path) -> tuple[int, bool]:
    """The events the tick recorded, and whether it imported jinja2 (rendered)."""
    done = subprocess.run([sys.executable, "-c", TICK, "tick", "--home", str(home)],
                          capture_output=True, text=True, check=True, timeout=300)
    events = int(done.stdout.split(" events")[0].rsplit(" ", 1)[1])
    return events, done.stderr.strip().splitlines()[-1] == "True"


def test_the_tick_after_a_record_is_published_renders_no_board(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    seen: list[tuple[int, bool, int]] = []
    page = settings.home / "board" / "index.html"
    deadline = time.monotonic() + 240
    def settled() -> bool:  # the run waits for its reviewer; two ticks recorded nothing
        return (len(seen) >= 3 and not any(events for events, _, _ in seen[-2:])
                and in_review(state_of(settings)))

    while not settled():
        assert time.monotonic() < deadline, seen
        events, rendered = _tick(settings.home)
        seen.append((events, rendered, page.stat().st_mtime_ns if page.exists() else 0))
        time.sleep(0.3)
    last_busy = max(n for n, (events, _, _) in enumerate(seen) if events)
    assert seen[last_busy][1], seen  # it published: it rendered
    events, rendered, written = seen[last_busy + 1]
    assert (events, rendered) == (0, False), seen
    assert written == seen[last_busy][2], "board/ was written again"
