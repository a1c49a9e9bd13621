"""A throwaway outerloop home laid out like a real one, and the probe runner.

Every test that asks "can a sandboxed child reach X" builds one of these under /tmp
(not pytest's 0700 tmp dir, so an unprivileged uid can enter it), runs ``probe.py``
inside the sandbox as root or as ``nobody``, and compares the home afterwards.
Root bypasses file permissions, so as root only the sandbox can cause a denial; as
``nobody`` the home is chowned to that user, so again only the sandbox can.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from outerloop.compute.base import Compute, JobSpec, JobState
from outerloop.sandbox import Confinement, Grants, Sandbox, scratch_tmp
from outerloop.sandbox.bwrap import BwrapSandbox
from outerloop.sandbox.landlock import WRAPPER, LandlockSandbox
from outerloop.sandbox.off import REAPER, OffSandbox
from outerloop.sandbox.resolve import bwrap_problem, landlock_problem
from outerloop.sandbox.uid import child_ids

UNPRIVILEGED_UID = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
FORGE_TOKEN = "ghp_PLANTEDforgeTOKEN0123456789abcdef"
MODEL_KEY = "sk-PLANTEDmodelKEY0123456789abcdef"
LEDGER_LINE = '{"v": 1, "seq": 1, "kind": "note"}\n'
PROBE = Path(__file__).with_name("probe.py")


@dataclass
class Fixture:
    root: Path
    uid: int | None

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def ws(self) -> Path:
        return self.home / "runs" / "r1" / "ws"

    @property
    def run_home(self) -> Path:
        return self.home / "runs" / "r1" / "home"

    def snapshot(self) -> dict[str, object]:
        """Bytes of every file of the home outside the child's own dirs, and modes."""
        out: dict[str, object] = {}
        for path in sorted(self.home.rglob("*")):
            rel = str(path.relative_to(self.home))
            if rel.startswith(("runs/r1/ws", "runs/r1/home")):
                continue
            info = path.lstat()
            out[rel] = (info.st_mode, path.read_bytes() if path.is_file()
                        and not path.is_symlink() else None)
        return out


def build(uid: int | None) -> Fixture:
    root = Path(tempfile.mkdtemp(prefix="outerloop-security-"))
    os.chmod(root, 0o755)
    fx = Fixture(root, uid)
    home = fx.home
    for part in ("keys", "ledger/demo__t/runs", "cache", "forge", "runs/r1/ws",
                 "runs/r1/home", "runs/r1/kernel", "runs/r1/jobs/j", "runs/r2/ws"):
        (home / part).mkdir(parents=True)
    (home / "keys" / "forge-token").write_text(FORGE_TOKEN + "\n")
    (home / "keys" / "model-key").write_text(MODEL_KEY + "\n")
    (home / "keys" / "ledger-hmac.key").write_text("ab" * 32 + "\n")  # ledger/attest.py
    for key in (home / "keys").iterdir():
        key.chmod(0o600)
    (home / "ledger" / "demo__t" / "tick.jsonl").write_text(LEDGER_LINE)
    (home / "ledger" / "demo__t" / "runs" / "r1.jsonl").write_text(LEDGER_LINE)
    (home / "ledger" / "demo__t" / "heads.jsonl").write_text(LEDGER_LINE)
    (home / "runs" / "r1" / "jobs" / "j" / "exit_code").write_text("0\n")
    (home / "outerloop.toml").write_text("[forge]\nkind = \"local\"\n")
    (fx.ws / "evil-link").symlink_to(home / "keys" / "forge-token")
    shutil.copy(PROBE, fx.ws / "probe.py")
    shutil.copy(WRAPPER, root / "landlock_exec.py")
    shutil.copy(REAPER, root / "reaper.py")
    return fx


def chown(fx: Fixture) -> None:
    if fx.uid is None:
        return
    for path in [fx.root, *fx.root.rglob("*")]:
        os.lchown(path, fx.uid, fx.uid)


@contextmanager
def fixture(uid: int | None) -> Iterator[Fixture]:
    fx = build(uid)
    try:
        yield fx
    finally:
        shutil.rmtree(fx.root, ignore_errors=True)


def as_user(uid: int | None) -> list[str]:
    if uid is None:
        return []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


def backend(kind: str, fx: Fixture) -> Sandbox:
    """The backend under test; as another user, the wrapper runs from the fixture with
    the system Python (the kernel's own interpreter may be unreadable to that user)."""
    if kind == "landlock":
        if fx.uid is None:
            return LandlockSandbox()
        return LandlockSandbox(python=SYSTEM_PYTHON, wrapper=str(fx.root / "landlock_exec.py"))
    if kind == "bwrap":
        return BwrapSandbox() if fx.uid is None else _UserBwrap()
    if fx.uid is None:
        return OffSandbox()
    return OffSandbox(python=SYSTEM_PYTHON, reaper=str(fx.root / "reaper.py"))


class _UserBwrap(BwrapSandbox):
    """bwrap run by another user cannot bind what that user cannot enter (the kernel's
    own interpreter under /root); the kernel and its children share a user in
    production, so only the test drops those grants."""

    def wrap(self, argv: Sequence[str], grants: Grants) -> list[str]:
        readable = tuple(p for p in grants.read_only if not p.startswith("/root"))
        return super().wrap(argv, replace(grants, read_only=readable))


def children_of(fx: Fixture) -> tuple[int, int] | None:
    """The user the children of the fixture's kernel run as: the root kernel's
    default child user (``uid.py``), or, when the fixture plays a kernel run by an
    unprivileged user, that user's own (None: no switch)."""
    return child_ids(None) if fx.uid is None else None


def skip_reason(kind: str, uid: int | None) -> str | None:
    if uid is not None and os.geteuid() != 0:
        return "the unprivileged variant needs root to switch user (CI runs as root)"
    if kind == "landlock":
        return landlock_problem()
    if kind == "bwrap":
        return bwrap_problem()
    return None


def probe_params(fx: Fixture, kind: str, ws: Path, job_dir: Path, helper_pid: int,
                 port: int) -> dict[str, object]:
    return {"home": str(fx.home), "ws": str(ws),
            "other_ws": str(fx.home / "runs" / "r2" / "ws"),
            "kernel": str(fx.home / "runs" / "r1" / "kernel"),
            "job_dir": str(job_dir), "helper_pid": helper_pid, "port": port,
            "expect_confined": kind != "off"}


@contextmanager
def helper_and_listener(uid: int | None) -> Iterator[tuple[int, int]]:
    """A same-user process outside the sandbox holding a secret in its environment,
    and a loopback TCP listener: (its pid, the port)."""
    helper = subprocess.Popen([*as_user(uid), "sleep", "300"],
                              env={"PATH": "/usr/bin:/bin", "HELPER_SECRET": FORGE_TOKEN})
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield helper.pid, listener.getsockname()[1]
    finally:
        helper.kill()
        helper.wait()
        listener.close()


def run_probe_job(compute: Compute, kind: str, fx: Fixture,
                  timeout_s: float = 120) -> dict[str, dict[str, str]]:
    """The probe as a launch runs it: a job whose command the sandbox confines to its
    checkout and scratch HOME, submitted to ``compute``; its findings from stdout."""
    tree = fx.home / "runs" / "r1" / "trees" / "probe"
    tree.mkdir(parents=True)
    shutil.copy(PROBE, tree / "probe.py")
    log_dir = fx.home / "runs" / "r1" / "jobs" / "probe"
    scratch = log_dir / "home"
    confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx))
    with helper_and_listener(fx.uid) as (pid, port):
        params = probe_params(fx, kind, tree, log_dir, pid, port)
        command = f"python3 probe.py {shlex.quote(json.dumps(params))}"
        spec = JobSpec(name="probe", command=confinement.shell(command, scratch, cwd_under=tree),
                       workdir=str(tree),
                       log_dir=str(log_dir), time_minutes=5,
                       env={"HOME": str(scratch), "TMPDIR": scratch_tmp(scratch)})
        job_id = compute.submit(spec)
        deadline = time.monotonic() + timeout_s
        while not (state := compute.observe([job_id])[job_id].state).terminal:
            assert time.monotonic() < deadline, f"the probe job never ended ({state})"
            time.sleep(0.3)
    out = (log_dir / "stdout").read_text()
    assert state == JobState.COMPLETED, f"{state}: {(log_dir / 'stderr').read_text()[-3000:]}"
    assert (log_dir / "exit_code").read_text().strip() == "0"
    result: dict[str, dict[str, str]] = json.loads(out.strip().splitlines()[-1])
    return result


def run_probe(kind: str, fx: Fixture) -> dict[str, dict[str, str]]:
    """Run the probe confined by ``kind`` as the fixture's user; its findings."""
    python = sys.executable if fx.uid is None else SYSTEM_PYTHON
    with helper_and_listener(fx.uid) as (pid, port):
        params = probe_params(fx, kind, fx.ws, fx.home / "runs" / "r1" / "jobs" / "j", pid,
                              port)
        confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(fx.run_home),
               "LANG": "C.UTF-8"}
        argv, env = confinement.command([python, str(fx.ws / "probe.py"), json.dumps(params)],
                                        env, workdir=fx.ws, scratch=fx.run_home)
        chown(fx)
        done = subprocess.run([*as_user(fx.uid), *argv], env=env, cwd=fx.ws,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"probe failed ({done.returncode}): {done.stderr[-3000:]}"
    result: dict[str, dict[str, str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
