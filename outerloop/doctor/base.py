"""A check's result, and the one way doctor runs a command."""

from __future__ import annotations

import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Literal

from outerloop.config import environ

Status = Literal["ok", "warn", "fail"]
COMMAND_TIMEOUT_S = 30


@dataclass(frozen=True)
class Check:
    """One line of the report: ``fail`` makes doctor exit 1; ``warn`` does not."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def line(self) -> str:
        word = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}[self.status]
        text = f"{word}  {self.name}: {self.detail}"
        return text + (f"  -> fix: {self.fix}" if self.fix and self.status != "ok" else "")

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Options:
    """What the command line chose: ``driver``, the tick driver whose environment
    ``pass_env`` is read in (None: the drivers found, else every driver the deploy
    files describe); ``quick`` skips the checks that run jobs and judge sessions
    (each then says it was not checked: a warning, never ok)."""

    driver: str | None = None
    quick: bool = False


def not_checked(name: str, what: str) -> Check:
    """A check ``--quick`` skipped: a warning, so it never reads as passed."""
    return warn(name, f"not checked (--quick): {what}", "run `outerloop doctor` without "
                "--quick before starting ticks")


def took(started: float, since: str = "") -> str:
    """`` (12.3 s)``: how long a job-based check took, for its detail (``since``:
    ``"after submission"`` when its job ran while other checks did)."""
    return f" ({time.monotonic() - started:.1f} s{' ' + since if since else ''})"


def ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, "fail", detail, fix)


def warn(name: str, detail: str, fix: str) -> Check:
    return Check(name, "warn", detail, fix)


def run(argv: list[str], timeout: float = COMMAND_TIMEOUT_S,
        input_text: str | None = None) -> subprocess.CompletedProcess[str] | None:
    """Run a probe; None when the program is missing. A timeout raises."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=environ(), input=input_text,
                              stdin=None if input_text is not None else subprocess.DEVNULL,
                              check=False)
    except FileNotFoundError:
        return None


def last_words(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1].strip() if lines else f"exit {done.returncode}, no message"
