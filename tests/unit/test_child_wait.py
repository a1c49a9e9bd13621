"""``child_wait``: a timed wait for a child ends when it exits, not at the next try of
subprocess's sleep loop; results, timeouts and failures are subprocess's."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from outerloop import child_wait

CLOSES_THEN_LINGERS = ["sh", "-c", "echo out; echo err >&2; exec >&- 2>&-; sleep 0.2; exit 3"]
"""A child that closes its output at once and exits 0.2 s later: ``communicate`` reads
its end of output at once, then waits for the exit (where subprocess sleeps)."""


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ``time.sleep`` this process makes (subprocess's wait loop uses it)."""
    made: list[float] = []
    real = time.sleep

    def counted(seconds: float) -> None:
        made.append(seconds)
        real(seconds)

    monkeypatch.setattr(time, "sleep", counted)
    return made


def test_a_timed_wait_sleeps_not_once_when_the_child_outlives_its_output(
        sleeps: list[float]) -> None:
    started = time.monotonic()
    done = child_wait.run(CLOSES_THEN_LINGERS, capture_output=True, text=True, timeout=10)
    took = time.monotonic() - started
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert sleeps == []
    assert 0.2 <= took < 5


def test_subprocess_itself_sleeps_there(sleeps: list[float]) -> None:
    """What the module saves: the same child under subprocess.run sleeps to notice."""
    subprocess.run(CLOSES_THEN_LINGERS, capture_output=True, timeout=10, check=False)
    assert len(sleeps) >= 3


def test_popen_communicate_under_a_timeout_sleeps_not_once(sleeps: list[float]) -> None:
    proc = child_wait.Popen(CLOSES_THEN_LINGERS, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=10)
    assert (proc.returncode, out, err) == (3, b"out\n", b"err\n")
    assert sleeps == []


def _children_running(argv: list[str]) -> list[int]:
    """This process's children (zombies too) whose command line is ``argv``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")[:-1]
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and words == [w.encode() for w in argv]:
            found.append(int(entry))
    return found


def test_a_child_past_its_timeout_is_killed_reaped_and_raised() -> None:
    argv = ["sleep", "31.5"]
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        child_wait.run(argv, timeout=0.3)
    assert time.monotonic() - started < 5
    assert _children_running(argv) == []  # killed and reaped: not even a zombie


def test_input_check_and_text_as_subprocess_run() -> None:
    done = child_wait.run(["cat"], input="a\nb\n", capture_output=True, text=True,
                          timeout=10)
    assert (done.returncode, done.stdout) == (0, "a\nb\n")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        child_wait.run(["sh", "-c", "exit 5"], timeout=10, check=True)
    assert failed.value.returncode == 5
    assert child_wait.run(["sh", "-c", "exit 5"], timeout=10).returncode == 5


def test_without_a_pidfd_the_wait_is_subprocess_s(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int, flags: int = 0) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", refused)
    done = child_wait.run(CLOSES_THEN_LINGERS, capture_output=True, timeout=10)
    assert (done.returncode, done.stdout) == (3, b"out\n")
    with pytest.raises(subprocess.TimeoutExpired):
        child_wait.run(["sleep", "30"], timeout=0.3)
