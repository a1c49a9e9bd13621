"""A root kernel's confined children do not run as root (issue 46, point 3).

Dropping every capability leaves a root child uid 0, the *owner* of every root-only
file: ``/etc/shadow``, Slurm's ``slurmdbd.conf`` (0600), munge's key. Each kind of
child is started here the way the kernel starts it (a session or an eval through
``Confinement.command``, a launch through ``Confinement.shell`` in a job on the local
runner), on both backends, with the kernel as root and the home below a 0700
directory as ``/root/.outerloop`` is: the child must be ``[sandbox] child_user``
(default ``nobody``), unable to read ``/etc/shadow`` or a root-owned 0600 canary in a
path it is granted, with no capability and no_new_privs set, and still able to write
its workspace and scratch and to run the kernel's own interpreter (under ``/root``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from outerloop.compute.base import JobSpec, JobState
from outerloop.compute.local import LocalCompute
from outerloop.doctor.sandbox import check_sandbox
from outerloop.sandbox import Confinement, scratch_tmp
from outerloop.sandbox.bwrap import BwrapSandbox
from outerloop.sandbox.handover import hand_over
from outerloop.sandbox.landlock import LandlockSandbox
from outerloop.sandbox.proof import _judge as _judge_proof
from outerloop.sandbox.resolve import bwrap_problem, landlock_problem
from outerloop.sandbox.uid import DEFAULT_ID
from tests.support import make_home

pytestmark = pytest.mark.security

CANARY = "ROOT-ONLY-CANARY-0600"
CHILD = r"""
import json, os, sys
out = {"uid": os.getresuid(), "gid": os.getresgid(), "groups": os.getgroups()}
status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
out["cap_eff"] = status["CapEff"].strip()
out["no_new_privs"] = status["NoNewPrivs"].strip()
def attempt(name, action):
    try:
        action()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = type(exc).__name__
attempt("read /etc/shadow", lambda: open("/etc/shadow").read())
attempt("read the canary", lambda: open(sys.argv[1]).read())
attempt("write its workspace", lambda: open("ws-ok", "w").write("ok"))
scratch = os.path.join(os.environ["TMPDIR"], "ok")
attempt("write its scratch", lambda: open(scratch, "w").write("ok"))
print(json.dumps(out))
"""


@dataclass
class Home:
    root: Path
    canary: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def ws(self) -> Path:
        return self.home / "runs" / "r1" / "ws"

    @property
    def scratch(self) -> Path:
        return self.home / "runs" / "r1" / "home"


@contextmanager
def root_home() -> Iterator[Home]:
    """A home 0700 below a 0700 directory (as ``/root/.outerloop``), and a root-owned
    0600 canary in a 0755 directory the children are granted (``[sandbox] read_only``,
    as ``/etc/slurm`` holding ``slurmdbd.conf``)."""
    root = Path(tempfile.mkdtemp(prefix="outerloop-uid-"))
    data = Path(tempfile.mkdtemp(prefix="outerloop-uid-data-"))
    try:
        os.chmod(root, 0o700)
        os.chmod(data, 0o755)
        for part in ("runs/r1/ws", "runs/r1/home", "keys"):
            (root / "home" / part).mkdir(parents=True, mode=0o700)
        os.chmod(root / "home", 0o700)
        (root / "home" / "runs" / "r1" / "ws" / "child.py").write_text(CHILD)
        canary = data / "slurmdbd.conf"
        canary.write_text(CANARY)
        os.chmod(canary, 0o600)
        yield Home(root, canary)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)


def _need_root_and(kind: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("the kernel must run as root for this (CI runs as root)")
    problem = landlock_problem() if kind == "landlock" else bwrap_problem()
    if problem:
        pytest.skip(f"{kind} cannot run here: {problem}")


def _confinement(kind: str, fx: Home) -> Confinement:
    sandbox = LandlockSandbox() if kind == "landlock" else BwrapSandbox()
    return Confinement(sandbox=sandbox, home=fx.home, read_only=(str(fx.canary.parent),))


def _judge(found: dict[str, object], fx: Home) -> None:
    assert found["uid"] == [DEFAULT_ID] * 3, found
    assert found["gid"] == [DEFAULT_ID] * 3 and found["groups"] == [], found
    assert int(str(found["cap_eff"]), 16) == 0 and found["no_new_privs"] == "1", found
    assert found["read /etc/shadow"] != "allowed", found
    assert found["read the canary"] != "allowed", found
    assert found["write its workspace"] == "allowed", found
    assert found["write its scratch"] == "allowed", found
    assert fx.canary.read_text() == CANARY


@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
@pytest.mark.parametrize("child", ["session", "eval"])
def test_child_is_the_child_user_and_reads_no_root_file_when_the_kernel_is_root(
        kind: str, child: str) -> None:
    _need_root_and(kind)
    with root_home() as fx:
        argv, env = _confinement(kind, fx).command(
            [sys.executable, "-I", "child.py", str(fx.canary)],
            {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(fx.scratch)},
            workdir=fx.ws, scratch=fx.scratch, declared_writes=child == "session")
        done = subprocess.run(argv, env=env, cwd=fx.ws, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr[-3000:]
        _judge(json.loads(done.stdout.strip().splitlines()[-1]), fx)


@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_launch_job_is_the_child_user_and_reads_no_root_file_when_the_kernel_is_root(
        kind: str, tmp_path: Path) -> None:
    _need_root_and(kind)
    with root_home() as fx:
        tree = fx.home / "runs" / "r1" / "trees" / "l1"
        (tree / "0").mkdir(parents=True, mode=0o700)
        shutil.copy(fx.ws / "child.py", tree / "0" / "child.py")
        log_dir = fx.home / "runs" / "r1" / "jobs" / "l1"
        scratch = log_dir / "home"
        command = f"{shlex.quote(sys.executable)} -I child.py {shlex.quote(str(fx.canary))}"
        shell = _confinement(kind, fx).shell(command, scratch, cwd_under=tree)
        runner = LocalCompute(tmp_path / "jobs")
        job = runner.submit(JobSpec(name="l1", command=f"cd {shlex.quote(str(tree / '0'))} && "
                                    f"{shell}", workdir=str(tree), log_dir=str(log_dir),
                                    time_minutes=5, env={"HOME": str(scratch),
                                                         "TMPDIR": scratch_tmp(scratch)}))
        deadline = time.monotonic() + 120
        while not (state := runner.observe([job])[job].state).terminal:
            assert time.monotonic() < deadline, f"the job never ended ({state})"
            time.sleep(0.2)
        assert state == JobState.COMPLETED, (log_dir / "stderr").read_text()[-3000:]
        found = json.loads((log_dir / "stdout").read_text().strip().splitlines()[-1])
        _judge(found, fx)


def test_handover_never_chowns_a_hard_link_nor_follows_a_symlink(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root (CI runs as root)")
    secret = tmp_path / "secret"
    secret.write_text("root only")
    os.chmod(secret, 0o600)
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "mine.txt").write_text("agent file")
    os.link(secret, ws / "sub" / "hard-link")
    (ws / "dir-link").symlink_to(outside)
    (ws / "file-link").symlink_to(secret)
    os.mkfifo(ws / "fifo")
    hand_over([str(ws)], DEFAULT_ID, DEFAULT_ID)
    assert (ws / "sub" / "mine.txt").stat().st_uid == DEFAULT_ID
    assert (ws / "sub").stat().st_uid == DEFAULT_ID
    assert secret.stat().st_uid == 0 and secret.stat().st_mode & 0o777 == 0o600
    assert outside.stat().st_uid == 0
    assert (ws / "dir-link").lstat().st_uid == 0 and (ws / "fifo").lstat().st_uid == 0


def test_proof_fails_closed_when_a_root_kernels_child_is_still_root() -> None:
    refused = {"read keys/": "PermissionError", "append to the ledger": "PermissionError",
               "read /etc/shadow": "PermissionError", "write its workspace": "allowed"}
    still_root = _judge_proof("landlock", {**refused, "uid": "0"}, False, "",
                              (DEFAULT_ID, DEFAULT_ID))
    assert not still_root.ok and "ran as uid 0" in still_root.detail
    switched = _judge_proof("landlock", {**refused, "uid": str(DEFAULT_ID)}, False, "",
                            (DEFAULT_ID, DEFAULT_ID))
    assert switched.ok and f"(uid {DEFAULT_ID})" in switched.detail


@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_doctor_names_the_child_user_and_proves_it_when_the_kernel_is_root(
        kind: str, tmp_path: Path) -> None:
    _need_root_and(kind)
    settings = make_home(tmp_path, extra_toml=f'[sandbox]\nkind = "{kind}"\n')
    checks = {c.name: c for c in check_sandbox(settings) if c.name in ("sandbox",
                                                                        "sandbox user")}
    assert checks["sandbox"].ok, checks["sandbox"].detail
    assert f"(uid {DEFAULT_ID})" in checks["sandbox"].detail
    assert "read /etc/shadow (PermissionError)" in checks["sandbox"].detail
    assert checks["sandbox user"].detail.endswith(f"uid {DEFAULT_ID} (nobody), gid "
                                                  f"{DEFAULT_ID}")
