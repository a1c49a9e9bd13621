"""A local task starts only once its runner has recorded it (``local_runner._held``):
a runner killed between starting a task and recording its process group would
otherwise leave a task that no cancel can find (seen in CI under load)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from outerloop.compute.local_runner import HELD_EXIT, _held, _release


def start_held(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    go_read, go_write = os.pipe()
    try:
        proc = subprocess.Popen(["bash", "-c", _held("touch ran", go_read)], cwd=tmp_path,
                                pass_fds=(go_read,), close_fds=True)
    finally:
        os.close(go_read)
    return proc, go_write


def test_task_runs_once_the_runner_releases_it(tmp_path: Path) -> None:
    proc, go_write = start_held(tmp_path)
    _release(go_write)
    assert proc.wait(timeout=30) == 0
    assert (tmp_path / "ran").exists()


def test_task_never_runs_when_its_runner_is_gone_before_releasing_it(tmp_path: Path) -> None:
    proc, go_write = start_held(tmp_path)
    os.close(go_write)  # what the kernel does for a runner killed outright
    assert proc.wait(timeout=30) == HELD_EXIT
    assert not (tmp_path / "ran").exists()


def test_task_is_held_until_released(tmp_path: Path) -> None:
    proc, go_write = start_held(tmp_path)
    try:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        assert proc.poll() is None and not (tmp_path / "ran").exists()
    finally:
        _release(go_write)
    assert proc.wait(timeout=30) == 0
