"""Children awaited on their exit, not by Python's sleep loop.

``subprocess`` waits for a child under a timeout (``run(timeout=)``,
``communicate(timeout=)``) by polling: ``waitpid(WNOHANG)``, then sleeps of 0.5, 1, 2
... up to 50 ms between tries. A git process that has closed its output is gone within
a fraction of a millisecond, yet its caller sleeps about a millisecond more, often two;
a tick that records something runs some twenty git processes (the ledger's commit, the
local forge's research-log record), so those sleeps were ~5 % of it.

``Popen`` here waits on the child's pidfd (Linux 5.3 and later): the wait ends when the
child exits, never later, and still at the timeout when it does not. Where there is no
pidfd (an older kernel, a seccomp filter refusing it), it waits as ``subprocess`` does.
Everything else (pipes, the timeout's ``TimeoutExpired``, killing) is ``subprocess``'s.
"""

from __future__ import annotations

import os
import select
import subprocess
from collections.abc import Sequence
from typing import Any


class Popen(subprocess.Popen[bytes]):
    """``subprocess.Popen`` whose timed waits end when the child exits (typed for bytes;
    ``run`` also gives it ``text=True``)."""

    def _wait(self, timeout: float | None) -> int | None:
        if timeout is not None and self.returncode is None:
            _exited_within(self.pid, timeout)
        waited: int | None = super()._wait(timeout)  # type: ignore[misc]
        return waited


def _exited_within(pid: int, timeout: float) -> None:
    """Block until the child ``pid`` exits or ``timeout`` seconds pass (whichever is
    first); returns at once when its pidfd cannot be had (the caller's own wait then
    does the waiting). Never reaps the child."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return
    try:
        select.select([fd], [], [], max(timeout, 0.0))
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)


def run(argv: Sequence[str], *, input: bytes | str | None = None,
        capture_output: bool = False, timeout: float | None = None, check: bool = False,
        **popen: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(argv, input=, capture_output=, timeout=, check=, ...)`` with
    ``Popen`` above: the same result, the same ``TimeoutExpired`` (the child killed and
    reaped first) and ``CalledProcessError``, without the sleeps."""
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    if capture_output:
        popen["stdout"] = popen["stderr"] = subprocess.PIPE
    process: subprocess.Popen[Any] = Popen(list(argv), **popen)
    with process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        except BaseException:
            process.kill()
            raise
        code = process.poll()
    code = -1 if code is None else code
    if check and code:
        raise subprocess.CalledProcessError(code, process.args, out, err)
    return subprocess.CompletedProcess(process.args, code, out, err)
