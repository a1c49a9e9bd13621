"""The host-services probe: run inside a sandbox, it tries to reach the host's services.

Standard library only (it runs under the system Python as an unprivileged user too).
Argument: a JSON object naming the sockets and jobs to try. Output: one JSON object
``{"leaks": {...}, "controls": {...}}`` mapping each attempt to "ok" or what stopped it.
Leaks must fail under a sandbox; controls are work that must still succeed.

The scheduler attempts are as a hostile agent makes them: ``sbatch --wrap`` of a job
that would write a marker outside every grant, ``squeue``, and ``scancel`` of a job
the test submitted from outside. The parent checks the scheduler afterwards too: a
command can fail here and still have acted.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys


def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    except subprocess.CalledProcessError as exc:
        return f"exit {exc.returncode}"
    except subprocess.TimeoutExpired:
        return "timeout"


def connect(path, kind=socket.SOCK_STREAM):
    def go():
        with socket.socket(socket.AF_UNIX, kind) as sock:
            sock.settimeout(5)
            sock.connect(path)
            if kind == socket.SOCK_STREAM:
                sock.sendall(b"hi")
    return go


def dgram_repointed(path):
    """A datagram socketpair end needs no socket(2): try to send to ``path`` with it."""
    def go():
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        with a, b:
            a.sendto(b"hi", path)
    return go


def run(argv):
    def go():
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return go


def main() -> None:
    p = json.loads(sys.argv[1])
    leaks = {"connect_outside_socket": connect(p["outside_socket"]),
             "sendto_outside_dgram_socket": connect(p["outside_dgram"], socket.SOCK_DGRAM),
             "socketpair_dgram_to_outside": dgram_repointed(p["outside_dgram"])}
    if p.get("munge"):
        leaks["connect_munge"] = connect(p["munge"])
    if p.get("slurm"):
        marker = p["marker"]
        leaks["sbatch"] = run(["sbatch", "--job-name", p["job_name"], "-o", "/dev/null",
                               "--wrap", f"touch {marker}"])
        leaks["squeue"] = run(["squeue", "-h"])
        leaks["scontrol_hold_other_job"] = run(["scontrol", "hold", p["victim"]])
        leaks["scancel_other_job"] = run(["scancel", p["victim"]])

    def tcp():
        with socket.create_connection(("127.0.0.1", p["port"]), timeout=5) as conn:
            conn.sendall(b"hi")

    def own_socket():
        path = os.path.join(p["ws"], "own.sock")
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path)
            server.listen(1)
            connect(path)()
        os.unlink(path)

    def git():
        repo = os.path.join(p["ws"], "svc-repo")
        env = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b",
                   GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@b")
        os.makedirs(repo, exist_ok=True)
        for argv in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "x"]):
            subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)

    def stream_socketpair():
        a, b = socket.socketpair()
        with a, b:
            a.sendall(b"x")
            assert b.recv(1) == b"x"

    controls = {"python": run([sys.executable, "-c", "import ssl, sqlite3, json"]),
                "git": git, "tcp_loopback": tcp, "stream_socketpair": stream_socketpair,
                "own_unix_socket": own_socket}
    if shutil.which("node"):
        controls["node"] = run(["node", "-e", "0"])
    print(json.dumps({"leaks": {k: attempt(v) for k, v in leaks.items()},
                      "controls": {k: attempt(v) for k, v in controls.items()}}))


if __name__ == "__main__":
    main()
