"""The cache's layout under the home and the state of each key, read from its files.

``<home>/deps/<owner>__<name>/<key>/``, one directory per lock key:

- ``requirements.txt``: the lock's bytes as the base tree holds them (written by the
  executor before the warm starts);
- ``warm.lock``: held (``flock``) by the warm while it runs; ``warm.log``: pip's output
  (its last line is the warm's progress);
- ``site/``: the packages (``pip install --target``), renamed into place whole;
  ``manifest.json`` written after it: the key is **warm** only once both exist;
- ``failed.json``: the last warm's failure (when, how many so far, pip's error);
- ``used``: touched by a run's job each time it hands ``site/`` to a child (its mtime
  is what pruning reads).

Only the kernel writes here: no sandboxed child is granted anything but ``site/``, and
that read-only. The directory lives under the home, so it is on the filesystem the
compute nodes already share with the tick host (runs, trees and job logs are there).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from outerloop.atomic import write_atomic
from outerloop.ledger.book import target_dir_name

DEPS_DIR = "deps"
SITE = "site"
MANIFEST = "manifest.json"
FAILED = "failed.json"
LOCK_COPY = "requirements.txt"
WARM_LOCK = "warm.lock"
WARM_LOG = "warm.log"
USED = "used"
MAX_ERROR_CHARS = 2000

State = Literal["warm", "warming", "failed", "cold", "stale"]
"""``warm``: the current lock's packages are built; ``warming``: a warm holds its lock
now; ``failed``: its last warm failed (retried with a backoff); ``cold``: never built;
``stale``: not built for the current lock but built for an older one (the lock
changed). Only ``warm`` lets a run start."""


def target_root(home: Path, target: str) -> Path:
    return home / DEPS_DIR / target_dir_name(target)


def key_dir(home: Path, target: str, key: str) -> Path:
    return target_root(home, target) / key


@dataclass(frozen=True)
class KeyState:
    """What one key's files say."""

    key: str
    state: State
    detail: str = ""
    """warm: how many packages, built when; warming: the warm's last line of output;
    failed: pip's error (its tail)."""
    failures: int = 0
    failed_at: float = 0.0
    """When the last failure was recorded (epoch seconds)."""
    built_at: float = 0.0
    last_used: float = 0.0
    """When a job last handed the site to a child, else when it was built or failed."""


def _manifest(where: Path) -> dict[str, object] | None:
    try:
        data = json.loads((where / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and (where / SITE).is_dir() else None


def _failure(where: Path) -> dict[str, object] | None:
    try:
        data = json.loads((where / FAILED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def warming(where: Path) -> bool:
    """True while a warm holds ``warm.lock`` (a lock nobody holds is a warm that ended)."""
    try:
        fd = os.open(where / WARM_LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def last_line(path: Path, limit: int = 4096) -> str:
    """The last non-empty line of ``path`` (its tail only), or ''."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - limit))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _number(data: dict[str, object], name: str) -> float:
    value = data.get(name)
    return float(value) if isinstance(value, int | float) else 0.0


def key_state(home: Path, target: str, key: str) -> KeyState:
    """The state of ``key``'s cache (``cold`` when it has no directory)."""
    where = key_dir(home, target, key)
    manifest = _manifest(where)
    if manifest is not None:
        built = _number(manifest, "built_at")
        packages = manifest.get("packages")
        count = len(packages) if isinstance(packages, list) else 0
        return KeyState(key, "warm", f"{count} package(s)", built_at=built,
                        last_used=max(built, _mtime(where / USED)))
    failure = _failure(where) or {}
    failures = int(_number(failure, "failures"))
    at = _number(failure, "at")
    if warming(where):
        return KeyState(key, "warming", last_line(where / WARM_LOG) or "starting",
                        failures=failures, failed_at=at, last_used=_mtime(where))
    if failure:
        return KeyState(key, "failed", str(failure.get("error", ""))[:MAX_ERROR_CHARS],
                        failures=failures, failed_at=at, last_used=max(at, _mtime(where)))
    return KeyState(key, "cold", last_used=_mtime(where))


def other_keys(home: Path, target: str, key: str) -> list[KeyState]:
    """Every key of ``target`` but ``key`` that has a directory, by name."""
    root = target_root(home, target)
    try:
        names = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != key)
    except OSError:
        return []
    return [key_state(home, target, name) for name in names]


@dataclass(frozen=True)
class DepsObservation:
    """A target's dependency cache as this tick saw it (``kernel/observe.py``)."""

    lock: str
    """The contract's ``dependencies.requirements`` path."""
    key: str | None = None
    """The key of the lock at the base tree; None when it could not be read or checked."""
    problem: str = ""
    """Why there is no key: the lock is missing at the base, or breaks a rule."""
    current: KeyState | None = None
    others: list[KeyState] = field(default_factory=list)

    @property
    def state(self) -> State | Literal["invalid"]:
        if self.current is None:
            return "invalid"
        if self.current.state == "cold" and any(o.state == "warm" for o in self.others):
            return "stale"
        return self.current.state

    @property
    def warm(self) -> bool:
        return self.current is not None and self.current.state == "warm"

    def why_not_warm(self) -> str:
        """One line for an issue waiting on the cache, or for doctor."""
        state = self.state
        if state == "invalid":
            return f"its dependency lock cannot be built: {self.problem}"
        words = {"warming": "being built", "failed": "failed to build (retried with a "
                 "backoff; `outerloop doctor` shows pip's error)",
                 "cold": "not built yet", "stale": "not built yet for the changed lock",
                 "warm": "warm"}[state]
        return f"its dependency cache for {self.lock} (key {self.key}) is {words}"


def site_if_warm(home: Path, target: str, key: str) -> Path | None:
    """``site/`` of a warm key, touching ``used`` (pruning reads it), else None."""
    where = key_dir(home, target, key)
    if _manifest(where) is None:
        return None
    with contextlib.suppress(OSError):  # a read-only view of the home still reads it
        (where / USED).touch()
    return where / SITE


def prune(home: Path, target: str, key: str) -> int:
    """Remove ``key``'s cache unless a warm holds it; the bytes freed (0: nothing to do)."""
    where = key_dir(home, target, key)
    if not where.is_dir() or warming(where):
        return 0
    size = sum(p.lstat().st_size for p in where.rglob("*"))
    shutil.rmtree(where, ignore_errors=True)
    return size


CURRENT = "current.json"
"""A memo of the last lock read: ``{"base", "lock", "key", "problem"}``, so a tick whose
default branch has not moved reads no file from the forge."""


def observe(home: Path, target: str, lock_path: str, base: str,
            read: Callable[[], bytes | None]) -> DepsObservation:
    """The target's cache as a tick sees it: the lock at ``base`` (``read`` is asked
    only when ``base`` or the path changed since the memo), its key and state, and the
    other keys' states."""
    from outerloop.deps import lock as lockrules

    memo_path = target_root(home, target) / CURRENT
    memo = _memo(memo_path)
    if (memo.get("base"), memo.get("lock"), memo.get("tag")) == (
            base, lock_path, lockrules.python_tag()):
        key, problem = memo.get("key") or None, str(memo.get("problem") or "")
    else:
        raw = read()
        if raw is None:
            key, problem = None, f"{lock_path} is not on the default branch ({base[:12]})"
        else:
            problems = lockrules.lock_problems(raw, lock_path)
            key = None if problems else lockrules.cache_key(raw)
            problem = "; ".join(problems)
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(memo_path, json.dumps({"base": base, "lock": lock_path, "key": key,
                                            "problem": problem,
                                            "tag": lockrules.python_tag()}) + "\n")
    return observation(home, target, lock_path, key, problem)


def observation(home: Path, target: str, lock_path: str, key: str | None,
                problem: str = "") -> DepsObservation:
    """The cache of ``key`` (None: the lock has ``problem``) and the target's others."""
    if key is None:
        return DepsObservation(lock=lock_path, problem=problem)
    return DepsObservation(lock=lock_path, key=key, current=key_state(home, target, key),
                           others=other_keys(home, target, key))


def _memo(path: Path) -> dict[str, str | None]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
