"""Building one key's cache on the tick host, and starting that build from a tick.

``start`` (the executor's ``WarmDeps``) writes the lock's bytes into the key's
directory and starts ``outerloop deps warm TARGET KEY`` detached, its output in
``warm.log``; the tick does not wait. ``run_warm`` (that process) holds the key's
``warm.lock`` for its whole life, so a second start while one runs does nothing, and
a start after a crash begins again from nothing (a half-built ``site.partial`` is
removed first). It runs ``pip install --target site.partial --only-binary :all:
-r requirements.txt`` with ``[deps] pip_args``, bounded by ``[deps] warm_minutes``;
success renames ``site.partial`` to ``site`` and writes ``manifest.json`` last, so a
reader sees the key warm only once it is whole; failure writes ``failed.json`` with
pip's error. Safe to retry at any point.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from outerloop.atomic import write_atomic
from outerloop.config import Settings
from outerloop.deps import lock, store
from outerloop.errors import OuterloopError

PARTIAL = "site.partial"
ERROR_LINES = 25
KILL_GRACE_S = 5.0


def start(settings: Settings, target: str, key: str, lock_path: str, lock_bytes: bytes) -> bool:
    """Start the warm of ``key`` unless it is warm or a warm holds its lock; True when
    one was started. The lock is taken here and handed to the process (its descriptor
    is inherited), so the key reads ``warming`` from this moment to the warm's end.
    Raises ``OuterloopError`` when ``lock_bytes`` is not ``key``'s."""
    if lock.cache_key(lock_bytes) != key:
        raise OuterloopError(f"the lock of {target} no longer has key {key} (it changed "
                             f"since this tick read it); the warm is planned again")
    where = store.key_dir(settings.home, target, key)
    where.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd = _locked(where)
    if fd is None:
        return False
    try:
        if store.key_state(settings.home, target, key).state == "warm":
            return False
        write_atomic(where / store.LOCK_COPY, lock_bytes)
        argv = [sys.executable, "-m", "outerloop", "deps", "warm", target, key,
                "--lock", lock_path, "--lock-fd", str(fd), "--home", str(settings.home)]
        with (where / store.WARM_LOG).open("ab") as log:
            subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True,
                             close_fds=True, pass_fds=(fd,), cwd=where)
        return True
    finally:
        os.close(fd)


def _locked(where: Path) -> int | None:
    """A descriptor holding ``warm.lock`` exclusively, or None when a warm holds it."""
    fd = os.open(where / store.WARM_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def pip_argv(settings: Settings, where: Path) -> list[str]:
    """The pip command that builds ``where``'s site (wheels only: no package code runs)."""
    return [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
            "--no-input", "--progress-bar", "off", "--no-warn-script-location",
            "--only-binary", ":all:", "--target", str(where / PARTIAL),
            "-r", str(where / store.LOCK_COPY), *settings.deps.pip_args]


def run_warm(settings: Settings, target: str, key: str, lock_path: str,
             lock_fd: int | None = None) -> int:
    """Build ``key``'s site (this is the detached process; ``lock_fd``: the lock its
    starter took for it): 0 when it is warm (now or already, or another warm holds the
    lock), 1 when it failed (``failed.json``)."""
    where = store.key_dir(settings.home, target, key)
    where.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd = lock_fd if lock_fd is not None else _locked(where)
    if fd is None:
        print(f"outerloop deps: another warm of {key} runs; nothing to do", flush=True)
        return 0
    try:
        if store.key_state(settings.home, target, key).state == "warm":
            return 0
        return _build(settings, target, key, lock_path, where)
    finally:
        os.close(fd)


def _build(settings: Settings, target: str, key: str, lock_path: str, where: Path) -> int:
    shutil.rmtree(where / PARTIAL, ignore_errors=True)
    try:
        lock_bytes = (where / store.LOCK_COPY).read_bytes()
    except OSError as exc:
        return _failed(where, f"no lock copy to build from ({exc.strerror})")
    problems = lock.lock_problems(lock_bytes, lock_path)
    if lock.cache_key(lock_bytes) != key:
        problems.insert(0, f"{store.LOCK_COPY} does not hash to {key}")
    if problems:
        return _failed(where, "; ".join(problems))
    print(f"outerloop deps: warming {target} {key} (limit {settings.deps.warm_minutes} min)",
          flush=True)
    started = time.monotonic()
    code = _pip(pip_argv(settings, where), where, settings.deps.warm_minutes * 60)
    if code != 0:
        shutil.rmtree(where / PARTIAL, ignore_errors=True)
        why = (f"pip ran past [deps] warm_minutes ({settings.deps.warm_minutes}) and was "
               f"stopped" if code is None else f"pip exited {code}")
        return _failed(where, f"{why}: {_tail(where / store.WARM_LOG)}")
    shutil.rmtree(where / store.SITE, ignore_errors=True)
    os.replace(where / PARTIAL, where / store.SITE)
    packages = sorted(p.name.removesuffix(".dist-info")
                      for p in (where / store.SITE).glob("*.dist-info"))
    manifest = {"key": key, "target": target, "python": sys.version.split()[0],
                "tag": lock.python_tag(), "built_at": time.time(), "packages": packages,
                "seconds": round(time.monotonic() - started, 3)}
    write_atomic(where / store.MANIFEST, json.dumps(manifest, indent=1) + "\n", fsync=True)
    (where / store.FAILED).unlink(missing_ok=True)
    print(f"outerloop deps: {key} is warm: {len(packages)} package(s)", flush=True)
    return 0


def _pip(argv: list[str], where: Path, limit_s: float) -> int | None:
    """Run pip with its output appended to the log; its exit code, None when stopped
    at ``limit_s``."""
    with (where / store.WARM_LOG).open("ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True, cwd=where)
        try:
            return proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
            return None


def _tail(log: Path) -> str:
    try:
        text = log.read_bytes()[-16384:].decode("utf-8", "replace")
    except OSError:
        return "(no output)"
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR" in line or "error" in line]
    shown = (errors or lines)[-ERROR_LINES:]
    return " | ".join(shown)[-store.MAX_ERROR_CHARS:] or "(no output)"


def _failed(where: Path, error: str) -> int:
    old: dict[str, object] = {}
    try:
        loaded = json.loads((where / store.FAILED).read_text(encoding="utf-8"))
        old = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        pass
    failures = old.get("failures")
    count = (failures if isinstance(failures, int) else 0) + 1
    record = {"at": time.time(), "failures": count, "error": error[:store.MAX_ERROR_CHARS]}
    write_atomic(where / store.FAILED, json.dumps(record) + "\n")
    print(f"outerloop deps: warm failed ({count}): {error}", flush=True)
    return 1
