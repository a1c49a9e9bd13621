"""The ledger's git repository: created by ``init``, committed (and pushed) by the tick."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from outerloop.errors import OuterloopError
from outerloop.ledger.store import LEDGER_DIR

GIT_TIMEOUT_S = 60


def _git(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *args],
        cwd=ledger, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False,
    )


def init_repo(home: Path) -> Path:
    """Create ``<home>/ledger`` as a git repository (idempotent)."""
    ledger = home / LEDGER_DIR
    ledger.mkdir(parents=True, exist_ok=True)
    if not (ledger / ".git").exists():
        for args in (
            ("init", "-q", "-b", "main"),
            ("config", "user.name", "outerloop"),
            ("config", "user.email", "outerloop@localhost"),
        ):
            done = _git(ledger, *args)
            if done.returncode != 0:
                raise OuterloopError(f"git {args[0]} in {ledger} failed: {done.stderr.strip()}")
    return ledger


def commit(home: Path, events: int) -> str | None:
    """Commit everything under ``ledger/``; return the new sha, or None if nothing
    changed. Run jobs only append; the tick commits what they wrote."""
    ledger = home / LEDGER_DIR
    if _git(ledger, "add", "-A").returncode != 0:
        raise OuterloopError(f"git add in {ledger} failed; fix: check the ledger repository")
    if _git(ledger, "diff", "--cached", "--quiet").returncode == 0:
        return None
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    done = _git(ledger, "commit", "-q", "-m", f"tick {stamp}: {events} events")
    if done.returncode != 0:
        raise OuterloopError(f"git commit in {ledger} failed: {done.stderr.strip()}")
    return _git(ledger, "rev-parse", "HEAD").stdout.strip()


def push(home: Path, remote: str) -> str | None:
    """Push the ledger to ``remote`` fast-forward only; returns a problem or None.

    A rejected push is logged and retried next tick; it is never forced."""
    ledger = home / LEDGER_DIR
    done = _git(ledger, "push", "-q", remote, "HEAD:refs/heads/main")
    if done.returncode != 0:
        return f"ledger push to {remote} refused: {done.stderr.strip()[:300]}"
    return None
