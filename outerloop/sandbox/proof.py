"""Prove the sandbox in force: a confined child tries to read ``keys/``, append to the
ledger, reach the host's services and write through a symlink, and every attempt must
be refused (``outerloop doctor`` shows the result).

The host-service attempts are what a hostile agent used to get around Landlock: a
connect to munge's socket and to a unix socket the doctor itself listens on outside
the grants, and ``squeue``, ``sbatch --test-only`` and ``scancel`` of a name no job has
(where those are on ``PATH``): each succeeds exactly when the child can talk to the
scheduler, and none of them starts, holds or cancels a job. The symlink attempt plants
``ws/escape`` pointing at a file outside the grants and appends through it. A child of
a root kernel also opens (reads nothing of) ``/etc/shadow`` and the other root-only
files here, and must be ``[sandbox] child_user``: a child that still runs as root fails
the proof (fail closed), whatever it was refused.

The probe can do no harm even if the sandbox were broken: it opens a key file and
reads nothing, opens a ledger file for appending and writes nothing, and the symlink
target is the doctor's own throwaway file. A positive control (a file written in its
own workspace) shows the child really ran.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from outerloop.config import Settings, environ
from outerloop.sandbox.base import SandboxError
from outerloop.sandbox.confine import DEFAULT_PATH, for_run
from outerloop.sandbox.resolve import in_force, off_warning

PROOF_DIR = ".sandbox-proof"
TIMEOUT_S = 60
MUNGE_SOCKET = "/run/munge/munge.socket.2"
PROBE_JOB_NAME = "outerloop-doctor-probe-no-such-job"
SCHEDULER = {"squeue": ["squeue", "-h", "-n", PROBE_JOB_NAME],
             "sbatch": ["sbatch", "--test-only", "-J", PROBE_JOB_NAME, "-o", "/dev/null",
                        "--wrap", "true"],
             "scancel": ["scancel", "-n", PROBE_JOB_NAME]}
"""Each exits 0 only when the scheduler accepted the caller (munge worked)."""
CHILD = r"""
import json, os, socket, subprocess, sys
key, ledger, ws, plan = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = {}
def attempt(name, action):
    try:
        action()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = type(exc).__name__ if exc.errno else str(exc)
    except subprocess.SubprocessError as exc:
        out[name] = type(exc).__name__
def read_key():
    if os.path.isdir(key):
        os.listdir(key)
    else:
        os.close(os.open(key, os.O_RDONLY))
def connect(path):
    def go():
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(path)
    return go
def started(argv):
    try:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as exc:
        return exc
def command(proc):
    def go():
        if isinstance(proc, OSError):
            raise proc
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        if code:
            raise OSError(f"exit {code}")
    return go
def through_link():
    link = os.path.join(ws, "escape")
    os.symlink(plan["link_target"], link)
    with open(link, "a") as handle:
        handle.write("escaped")
attempt("read keys/", read_key)
attempt("append to the ledger",
        lambda: os.close(os.open(ledger, os.O_WRONLY | os.O_APPEND)))
for name, path in plan["sockets"].items():
    attempt(name, connect(path))
running = {name: started(argv) for name, argv in plan["commands"].items()}
for name, proc in running.items():  # at once: each retries a refused munge for seconds
    attempt(name, command(proc))
attempt("write through a symlink out of its workspace", through_link)
for path in plan["root_only"]:
    attempt(f"read {path}", lambda: os.close(os.open(path, os.O_RDONLY)))
attempt("write its workspace", lambda: open(os.path.join(ws, "ok"), "w").close())
out["uid"] = str(os.getuid())
print(json.dumps(out))
"""
CONTROL = "write its workspace"
UID = "uid"
"""The key of the child's uid in its findings (``CHILD`` writes it)."""
ROOT_ONLY = ("/etc/shadow", "/etc/munge/munge.key", "/etc/slurm/slurmdbd.conf")
"""Root-only files a child of a root kernel must not open (it would own them as root):
each that exists here is tried (opened, never read)."""
NET_UNIX = "/proc/net/unix"
LISTENING_FLAG = 0x10000
"""``__SO_ACCEPTCON`` in ``/proc/net/unix``'s Flags column: the socket listens."""


def abstract_listeners(table: str | None = None) -> list[str]:
    """The host's listening *abstract* unix sockets (``@name``): bwrap shares the
    network namespace, so a bwrap child can connect to them (Landlock scopes them
    from ABI 6). Empty when the table cannot be read."""
    if table is None:
        try:
            table = Path(NET_UNIX).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
    found = []
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("@"):
            try:
                listening = int(fields[3], 16) & LISTENING_FLAG
            except ValueError:
                continue
            if listening:
                found.append(fields[7])
    return sorted(set(found))


@dataclass(frozen=True)
class Proof:
    ok: bool
    detail: str
    hint: str = ""


def _targets(home: Path) -> tuple[Path, Path]:
    keys = home / "keys"
    key = next((p for p in sorted(keys.glob("*")) if p.is_file()), keys)
    ledger = home / "ledger"
    found = next(iter(sorted(ledger.rglob("*.jsonl"))), None)
    return key, found or ledger / ".git" / "HEAD"


def _path() -> str:
    return environ().get("PATH") or DEFAULT_PATH


def _env(scratch: Path) -> dict[str, str]:
    """The child's environment: the kernel's PATH (where a session finds ``sbatch``)
    and Slurm's config location when the kernel has one."""
    env = {"PATH": _path(), "HOME": str(scratch), "LANG": "C.UTF-8"}
    if environ().get("SLURM_CONF"):
        env["SLURM_CONF"] = environ()["SLURM_CONF"]
    return env


def _plan(outside: Path, listening: str) -> dict[str, object]:
    sockets = {"connect to a unix socket outside its grants": listening}
    if os.path.exists(MUNGE_SOCKET):
        sockets["connect to munge (the scheduler's authentication)"] = MUNGE_SOCKET
    commands = {f"run {name}": [found, *argv[1:]] for name, argv in SCHEDULER.items()
                if (found := shutil.which(argv[0], path=_path()))}
    root_only = [p for p in ROOT_ONLY if os.path.exists(p)] if os.geteuid() == 0 else []
    return {"sockets": sockets, "commands": commands, "root_only": root_only,
            "link_target": str(outside / "link-target")}


def prove(settings: Settings, where: str = PROOF_DIR) -> Proof:
    """Run the probe under the sandbox the settings give a session, in
    ``runs/<where>/`` (a probe job on a compute node uses its own)."""
    name = in_force(settings.sandbox)
    warning = off_warning(settings.sandbox)
    try:
        confinement = for_run(settings)
    except SandboxError as exc:
        return Proof(False, f"{name}: {exc}", "see docs/security.md")
    if confinement.kind == "off":
        return Proof(False, warning or "sandbox off")
    root = settings.home / "runs" / where
    ws, scratch = root / "ws", root / "home"
    ws.mkdir(parents=True, exist_ok=True)
    scratch.mkdir(exist_ok=True)
    outside = Path(tempfile.mkdtemp(prefix="outerloop-proof-"))
    (outside / "link-target").write_text("")
    _open_to_anyone(outside)
    key, ledger = _targets(settings.home)
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(outside / "s"))
        os.chmod(outside / "s", 0o666)
        listener.listen(4)
        plan = _plan(outside, str(outside / "s"))
        argv, env = confinement.command(
            [sys.executable, "-I", "-c", CHILD, str(key), str(ledger), str(ws), json.dumps(plan)],
            _env(scratch), workdir=ws, scratch=scratch)
        done = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S * 2)
        seen = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
        escaped = (outside / "link-target").read_text() != ""
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        return Proof(False, f"{name}: the probe could not run: {exc}", "see docs/security.md")
    finally:
        listener.close()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(outside, ignore_errors=True)
    return _judge(name, seen, escaped, done.stderr, confinement.user)


def _open_to_anyone(outside: Path) -> None:
    """The doctor's own throwaway targets open to every user, so only the sandbox can
    refuse them, whatever uid the child runs as (a root kernel's is ``child_user``)."""
    os.chmod(outside, 0o755)
    os.chmod(outside / "link-target", 0o666)


def _judge(name: str, seen: dict[str, str], escaped: bool, stderr: str,
           user: tuple[int, int] | None = None) -> Proof:
    if seen.get(CONTROL) != "allowed":
        ran = seen or stderr[-300:]
        return Proof(False, f"{name}: the probe did not run normally ({ran})",
                     "see docs/security.md")
    uid = seen.pop(UID, "?")
    if user is not None and uid != str(user[0]):
        return Proof(False, f"{name}: a confined child of this root kernel ran as uid {uid}, "
                            f"not as [sandbox] child_user (uid {user[0]}): it owns every "
                            f"root-only file", "report this; see docs/security.md, \"Root\"")
    tried = [k for k in seen if k != CONTROL]
    leaks = [k for k in tried if seen[k] == "allowed"]
    if escaped and "write through a symlink out of its workspace" not in leaks:
        leaks.append("write through a symlink out of its workspace")
    if leaks:
        return Proof(False, f"{name}: a confined child could {', '.join(leaks)}",
                     "report this; set [sandbox] kind to the other backend meanwhile "
                     "(docs/security.md)")
    return Proof(True, f"{name}: a confined child (uid {uid}) was refused reading keys/ "
                       f"({seen['read keys/']}) and appending to the ledger "
                       f"({seen['append to the ledger']}), and each of: "
                       + ", ".join(f"{k} ({seen[k]})" for k in tried[2:]))
