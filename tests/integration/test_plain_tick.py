"""A plain ``outerloop tick`` line runs without click (``cli/tick_run.py``): it prints,
fails and exits exactly as the click command does, and anything that is not a plain
tick line goes to click, which words the mistake."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.cli.tick_run import PlainTick, plain_tick
from tests.support import make_home

THROUGH_CLICK = "import sys\nfrom outerloop.cli import main\nmain(sys.argv[1:])\n"
PLAIN = "import sys\nfrom outerloop.cli import entry\nentry(sys.argv[1:])\n"


def _run(code: str, *args: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, check=False, timeout=120)
    timing = re.compile(r"\d+\.\d+s\b")  # the tick's own duration
    return done.returncode, timing.sub("Ns", done.stdout), timing.sub("Ns", done.stderr)


@pytest.mark.parametrize(("words", "read"), [
    (["tick"], PlainTick(None, False, False)),
    (["tick", "--home", "h"], PlainTick(Path("h"), False, False)),
    (["tick", "--home=h", "--quiet"], PlainTick(Path("h"), True, False)),
    (["--debug", "tick", "--quiet", "--home", "h"], PlainTick(Path("h"), True, True)),
])
def test_a_plain_tick_line_is_read_without_click(words: list[str], read: PlainTick) -> None:
    assert plain_tick(words) == read


@pytest.mark.parametrize("words", [
    [], ["status"], ["tick", "--help"], ["tick", "--bogus"], ["tick", "--home"],
    ["tick", "--home", "a", "--home", "b"], ["tick", "--quiet", "--quiet"],
    ["tick", "--home", "--quiet"], ["tick", "--home=-x"], ["tick", "extra"],
    ["--version"], ["tick", "--debug"],
])
def test_anything_else_goes_to_click(words: list[str]) -> None:
    assert plain_tick(words) is None


def test_a_plain_tick_prints_and_exits_as_the_click_command(tmp_path: Path) -> None:
    """Two homes made alike, one ticked each way, tick after tick (the first acts)."""
    plain, clicked = (str(make_home(tmp_path / side).home) for side in ("plain", "click"))
    for words in (["tick", "--home", "{}"], ["tick", "--home={}", "--quiet"],
                  ["tick", "--home", "{}"], ["tick", "--home", "{}/missing"]):
        one = _run(PLAIN, *(w.format(plain) for w in words))
        other = _run(THROUGH_CLICK, *(w.format(clicked) for w in words))
        assert one == tuple(x if type(x) is int else x.replace(clicked, plain)
                            for x in other), words
    for home in (plain, clicked):
        (Path(home) / "PAUSE").write_text("")
    paused = _run(PLAIN, "tick", "--home", plain)
    assert paused == _run(THROUGH_CLICK, "tick", "--home", plain)
    assert paused[0] == 0 and "paused" in paused[1]
    rc, _out, err = _run(PLAIN, "tick", "--home", str(tmp_path / "no-home"))
    assert rc != 0 and err.startswith("outerloop: no home at ") and "Traceback" not in err


def test_a_plain_tick_imports_no_click_and_a_mistyped_one_gets_clicks_words(
        tmp_path: Path) -> None:
    home = str(make_home(tmp_path).home)
    seen = ("import atexit, sys\n"
            "atexit.register(lambda: print('click' in sys.modules, file=sys.stderr))\n")
    rc, out, err = _run(seen + PLAIN, "tick", "--home", home)
    assert rc == 0 and out.startswith("tick: ") and err.strip() == "False"
    rc, out, err = _run(PLAIN, "tick", "--hmoe", home)
    assert rc == 2 and "No such option --hmoe" in err.replace("'", "")


QUIET_TICK_LEAVES_OUT = ("click", "jinja2", "yaml", "importlib.metadata", "concurrent.futures",
                         "socket", "outerloop.sandbox.confine", "outerloop.sandbox.bwrap",
                         "outerloop.sandbox.landlock", "outerloop.board")
"""What a tick that decides "nothing to do" never needs: each costs 3-30 ms to import."""


def test_a_quiet_tick_imports_none_of_what_only_a_busy_one_needs(tmp_path: Path) -> None:
    home = str(make_home(tmp_path).home)
    seen = ("import atexit, sys\n"
            f"out = {QUIET_TICK_LEAVES_OUT!r}\n"
            "atexit.register(lambda: print(*(m for m in out if m in sys.modules),"
            " file=sys.stderr))\n")
    for _ in range(3):  # until it settles: the first ticks act
        rc, out, err = _run(seen + PLAIN, "tick", "--home", home)
        assert rc == 0, err
    assert out.startswith("tick: 0 actions, 0 events"), out
    assert err.split() == []
