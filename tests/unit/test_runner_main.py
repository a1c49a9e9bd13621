"""A local job's runner starts as ``python -m outerloop.compute.runner_main``: its own
parser, none of the command line's modules (each job pays its imports)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from outerloop.compute import local_gate, runner_main
from outerloop.compute.local_gate import GATE_SCRIPT


def test_the_runner_argv_is_what_the_runner_parses(tmp_path: Path) -> None:
    argv = local_gate.runner_argv("/usr/bin/python3", tmp_path, "10000003")
    assert argv[:3] == ["/usr/bin/python3", "-m", local_gate.RUNNER_MODULE]
    assert runner_main.parse(argv[3:]) == (tmp_path, "10000003", False)
    assert runner_main.parse(["--jobs-dir", str(tmp_path), "--signalled", "7"]) == (
        tmp_path, "7", True)


def test_a_malformed_argv_says_the_usage_and_exits_2() -> None:
    done = subprocess.run([sys.executable, "-m", local_gate.RUNNER_MODULE, "7"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("usage: ")


def test_the_gate_hands_over_to_the_same_runner_module() -> None:
    text = GATE_SCRIPT.read_text()
    execs = [line.strip() for line in text.splitlines() if line.strip().startswith("exec \"$py\"")]
    assert len(execs) == 2
    assert all(f"-m {local_gate.RUNNER_MODULE} " in line for line in execs)


def test_the_runner_imports_no_command_line_module() -> None:
    probe = ("import sys, outerloop.compute.local_runner as r; "
             "print(sorted(m for m in sys.modules if m.startswith('outerloop.cli') "
             "or m == 'click'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"
