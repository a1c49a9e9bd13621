"""Where a run's files live under the home (pure: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RUNS_DIR = "runs"

WINS_DIR = "wins"
"""The folder of a combination run's home that holds its wins as patches."""


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @classmethod
    def of(cls, home: Path, run_id: str) -> RunPaths:
        return cls(home / RUNS_DIR / run_id)

    @property
    def kernel(self) -> Path:
        return self.root / "kernel"

    @property
    def kernel_git(self) -> Path:
        return self.kernel / ".git"

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def wins(self) -> Path:
        """A combination run's patches, in the agent's home (``run/wins.py``)."""
        return self.home / WINS_DIR

    def job_dir(self, name: str) -> Path:
        return self.root / "jobs" / name

    def tree(self, name: str, task: int | None = None) -> Path:
        base = self.root / "trees" / name
        return base if task is None else base / str(task)

    @property
    def legs(self) -> Path:
        return self.root / "legs"

    @property
    def report(self) -> Path:
        return self.root / "report.md"


def branch_name(agent: str, run_id: str) -> str:
    return f"outerloop/{agent}/{run_id}"
