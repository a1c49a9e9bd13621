"""``outerloop tick`` as a process leaves without the interpreter's teardown (``cli.entry``):
what it prints, its exit code, ``atexit`` handlers and other threads' work still arrive."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import make_home


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=False, timeout=120)


def test_a_tick_prints_its_summary_into_a_pipe_and_exits_0(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    done = subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home",
                           str(settings.home)], capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tick: ") and done.stdout.endswith("\n")


def test_atexit_handlers_and_live_threads_finish_before_the_tick_leaves(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    late = tmp_path / "written-by-a-thread"
    done = _python(
        "import atexit, sys, threading, time\n"
        "from pathlib import Path\n"
        "from outerloop.cli import entry\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "threading.Thread(target=lambda: (time.sleep(1), Path(sys.argv[2]).write_text('x')))"
        ".start()\n"
        "entry(['tick', '--home', sys.argv[1]])\n", str(settings.home), str(late))
    assert done.returncode == 0, done.stderr
    assert "tick: " in done.stdout and done.stdout.rstrip().endswith("atexit ran")
    assert late.read_text() == "x"


def test_the_exit_code_is_what_systemexit_would_give() -> None:
    for code, rc in (("None", 0), ("3", 3), ("'a message'", 1)):
        done = _python(f"from outerloop.cli import _leave\nprint('out')\n_leave({code})\n"
                       f"raise SystemExit('not reached')")
        assert (done.returncode, done.stdout) == (rc, "out\n"), done.stderr
        if code == "'a message'":
            assert done.stderr == "a message\n"


def test_a_tick_skips_the_teardown_but_another_command_does_not(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    code = ("import sys\n"
            "class Kept:\n"
            "    def __del__(self) -> None:\n"
            "        print('torn down', flush=True)\n"
            "kept = Kept()\n"
            "from outerloop.cli import entry\n"
            "entry([sys.argv[2], '--home', sys.argv[1]])\n")
    tick = _python(code, str(settings.home), "tick")
    assert tick.returncode == 0 and "tick: " in tick.stdout and "torn down" not in tick.stdout
    status = _python(code, str(settings.home), "status")
    assert status.returncode == 0 and "torn down" in status.stdout
