"""No host services from inside: a sandboxed child reaches no unix socket outside its
grants (munge, a socket the test listens on in the home), so it can neither submit,
list, cancel nor hold a Slurm job; on each backend, as root and as an unprivileged user.

Before the fix, Landlock (ABI <= 8) did not govern ``connect()`` to a pathname unix
socket: a confined child reached munge and ``sbatch --wrap`` worked, and slurmd ran the
job outside every sandbox. Positive controls in the same run (python, git, loopback TCP,
a stream socketpair, and a unix socket in the child's own workspace where the backend
allows it) show the refusals come from the rule, not a broken child.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from outerloop.sandbox import Confinement
from outerloop.sandbox.landlock import abi_version
from outerloop.sandbox.landlock_exec import host_sockets_closed_by
from tests.local_slurm import NO_REAL_SLURM
from tests.security.fixtures import (
    SYSTEM_PYTHON,
    UNPRIVILEGED_UID,
    Fixture,
    as_user,
    backend,
    children_of,
    chown,
    fixture,
    skip_reason,
)

pytestmark = pytest.mark.security

USERS = {"root": None, "unprivileged": UNPRIVILEGED_UID}
PROBE = Path(__file__).with_name("services_probe.py")
MUNGE_SOCKET = "/run/munge/munge.socket.2"
SETTLE_S = 3.0


def real_slurm() -> bool:
    return os.environ.get("OUTERLOOP_REAL_SLURM") == "1"


def own_sockets_allowed(kind: str) -> bool:
    """bwrap and Landlock ABI 9 let a child use its own unix sockets; the seccomp
    filter (Landlock below ABI 9) refuses every one (docs/security.md)."""
    return kind == "bwrap" or host_sockets_closed_by(abi_version()) == "landlock"


@contextmanager
def listeners(fx: Fixture) -> Iterator[tuple[str, str, int]]:
    """A stream and a datagram unix socket in the home (outside every grant), and a
    loopback TCP listener: (stream path, datagram path, port)."""
    stream_path = str(fx.home / "cache" / "ctl.sock")
    dgram_path = str(fx.home / "cache" / "dgram.sock")
    with ExitStack() as stack:
        stream = stack.enter_context(socket.socket(socket.AF_UNIX))
        stream.bind(stream_path)
        stream.listen(8)
        dgram = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
        dgram.bind(dgram_path)
        for path in (stream_path, dgram_path):
            os.chmod(path, 0o777)  # DAC allows the unprivileged user: only the sandbox refuses
        tcp = stack.enter_context(socket.socket())
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(8)
        yield stream_path, dgram_path, tcp.getsockname()[1]


def slurm(argv: list[str], uid: int | None = None) -> str:
    done = subprocess.run([*as_user(uid), *argv], capture_output=True, text=True, timeout=60,
                          check=True)
    return done.stdout.strip()


@contextmanager
def victim_job() -> Iterator[str]:
    """A job pending for an hour (it holds no CPU), submitted by root (the kernel's
    user here): the one the child tries to cancel and hold."""
    job_id = slurm(["sbatch", "--parsable", "--begin=now+1hour", "--job-name", "victim",
                    "--chdir", "/tmp", "-o", "/dev/null", "--wrap", "sleep 1"])
    try:
        yield job_id.split(";")[0]
    finally:
        subprocess.run(["scancel", job_id.split(";")[0]], capture_output=True, timeout=60)


def run_services_probe(kind: str, fx: Fixture, params: dict[str, object]) -> dict[str, dict[
        str, str]]:
    python = sys.executable if fx.uid is None else SYSTEM_PYTHON
    (fx.ws / "services_probe.py").write_bytes(PROBE.read_bytes())
    confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(fx.run_home), "LANG": "C.UTF-8"}
    argv, env = confinement.command([python, str(fx.ws / "services_probe.py"),
                                     json.dumps({**params, "ws": str(fx.ws)})],
                                    env, workdir=fx.ws, scratch=fx.run_home)
    chown(fx)
    done = subprocess.run([*as_user(fx.uid), *argv], env=env, cwd=fx.ws, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"probe failed ({done.returncode}): {done.stderr[-3000:]}"
    result: dict[str, dict[str, str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def check_controls(kind: str, user: str, found: dict[str, dict[str, str]]) -> None:
    controls = dict(found["controls"])
    own = controls.pop("own_unix_socket")
    broken = {k: v for k, v in controls.items() if v != "ok"}
    assert broken == {}, f"{kind} as {user} broke normal work: {broken}"
    if own_sockets_allowed(kind):
        assert own == "ok", f"{kind} as {user} refused the child's own unix socket: {own}"
    else:
        assert own == "EACCES", f"the seccomp filter let a unix socket be made: {own}"


@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_child_cannot_connect_to_host_unix_sockets_when_sandboxed(kind: str, user: str) -> None:
    uid = USERS[user]
    reason = skip_reason(kind, uid)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    with fixture(uid) as fx:
        chown(fx)
        with listeners(fx) as (stream, dgram, port):
            params = {"outside_socket": stream, "outside_dgram": dgram, "port": port,
                      "munge": MUNGE_SOCKET if os.path.exists(MUNGE_SOCKET) else None}
            found = run_services_probe(kind, fx, params)
        leaked = {k: v for k, v in found["leaks"].items() if v == "ok"}
        assert leaked == {}, f"{kind} as {user} reached a host socket: {leaked}"
        check_controls(kind, user, found)


def scheduler_params(fx: Fixture, name: str, victim: str) -> dict[str, object]:
    return {"slurm": True, "job_name": name, "marker": str(fx.root / "submitted-job-ran"),
            "victim": victim, "munge": MUNGE_SOCKET if os.path.exists(MUNGE_SOCKET) else None}


def assert_scheduler_untouched(fx: Fixture, name: str, victim: str) -> None:
    time.sleep(SETTLE_S)
    assert slurm(["squeue", "-h", "-n", name]) == ""
    assert slurm(["sacct", "-n", "-X", "--name", name, "-o", "JobID"]) == ""
    assert not (fx.root / "submitted-job-ran").exists()
    shown = slurm(["scontrol", "show", "job", victim])
    assert "JobState=PENDING" in shown and "Held" not in shown, shown


@pytest.mark.slurm
@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_child_cannot_submit_list_cancel_or_hold_slurm_jobs_when_sandboxed(
        kind: str, user: str) -> None:
    """As root the unconfined child could do all four (the negative control below);
    uid 65534 has no Slurm account here, so for it ``squeue`` and the munge connect
    are what the sandbox alone refuses."""
    if not real_slurm():
        pytest.skip(NO_REAL_SLURM)
    uid = USERS[user]
    reason = skip_reason(kind, uid)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    name = f"hostile-{uuid.uuid4().hex[:10]}"
    with fixture(uid) as fx, victim_job() as victim:
        chown(fx)
        with listeners(fx) as (stream, dgram, port):
            params = {"outside_socket": stream, "outside_dgram": dgram, "port": port,
                      **scheduler_params(fx, name, victim)}
            found = run_services_probe(kind, fx, params)
        leaked = {k: v for k, v in found["leaks"].items() if v == "ok"}
        assert leaked == {}, f"{kind} as {user} used the scheduler: {leaked}"
        check_controls(kind, user, found)
        assert_scheduler_untouched(fx, name, victim)


@pytest.mark.slurm
def test_services_probe_reports_the_scheduler_when_sandbox_is_off() -> None:
    """Negative control: unconfined, the same probe reaches munge and the outside
    socket and submits, lists, holds and cancels; so it can see each leak."""
    if not real_slurm():
        pytest.skip(NO_REAL_SLURM)
    name = f"control-{uuid.uuid4().hex[:10]}"
    with fixture(None) as fx, victim_job() as victim:
        with listeners(fx) as (stream, dgram, port):
            params = {"outside_socket": stream, "outside_dgram": dgram, "port": port,
                      **scheduler_params(fx, name, victim)}
            found = run_services_probe("off", fx, params)
        missed = {k: v for k, v in found["leaks"].items() if v != "ok"}
        assert missed == {}, f"the unconfined probe could not do {missed}: it cannot see leaks"
        subprocess.run(["scancel", "-n", name], capture_output=True, timeout=60)


WALK = r"""
import json, os, stat, sys
found, links = [], []
for top in sorted(os.listdir("/")):
    if top == "proc":
        continue
    for root, dirs, files in os.walk("/" + top):
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    found.append(path)
                elif os.path.islink(path) and stat.S_ISSOCK(os.stat(path).st_mode):
                    links.append(path)
            except OSError:
                continue
print(json.dumps({"top": sorted(os.listdir("/")), "sockets": found, "socket_links": links,
                  "hidden": [p for p in sys.argv[1:] if not os.path.exists(p)]}))
"""
HOST_SOCKET_DIRS = ("/run", "/var/run", "/run/munge", "/var/lib/slurm", "/run/dbus",
                    "/var/run/docker.sock", "/run/containerd")


def test_bwrap_child_sees_no_socket_file_anywhere() -> None:
    """Every path a bwrap child can see (the grants: /usr, /etc, /opt, /sys, the
    interpreter, its own dirs; bwrap's own /dev and /tmp) holds no unix socket, and no
    symlink in them leads to one; the host's socket directories are absent."""
    reason = skip_reason("bwrap", None)
    if reason:
        pytest.skip(f"bwrap cannot run here: {reason}")
    with fixture(None) as fx:
        confinement = Confinement(sandbox=backend("bwrap", fx), home=fx.home, user=children_of(fx))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(fx.run_home)}
        argv, env = confinement.command([sys.executable, "-I", "-c", WALK, *HOST_SOCKET_DIRS],
                                        env, workdir=fx.ws, scratch=fx.run_home)
        done = subprocess.run(argv, env=env, cwd=fx.ws, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["sockets"] == [] and seen["socket_links"] == [], seen
    assert seen["hidden"] == list(HOST_SOCKET_DIRS), seen
    assert "run" not in seen["top"] and "var" not in seen["top"], seen["top"]
