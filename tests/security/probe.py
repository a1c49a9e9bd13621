"""The hostile probe: run inside a sandbox, it tries every escape and reports each.

Standard library only (it runs under the system Python as an unprivileged user too).
Argument: a JSON object with the fixture's paths. Output: one JSON object mapping each
attempt to "ok" or the errno name it met. Leaks are attempts that must fail under a
sandbox; controls are work that must still succeed.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path


def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    except subprocess.CalledProcessError as exc:
        return f"exit {exc.returncode}"


def main() -> None:
    p = json.loads(sys.argv[1])
    home, ws, other, kernel = p["home"], p["ws"], p["other_ws"], p["kernel"]

    def read(path):
        return lambda: open(path, encoding="utf-8").read()

    line = '{"kind": "verdict", "forged": true}\n'

    def append(path, existing=False):
        def go():
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line)
            if existing and Path(path).read_text(encoding="utf-8") == line:
                raise OSError(errno.ENOENT, "wrote a throwaway copy; the real file is hidden")
        return go

    def list_home():
        if not {"keys", "ledger"} & set(os.listdir(home)):
            raise OSError(errno.ENOENT, "the home's contents are hidden")

    leaks = {
        "read_key": read(f"{home}/keys/forge-token"),
        "read_ledger_key": read(f"{home}/keys/ledger-hmac.key"),
        "append_heads": append(f"{home}/ledger/demo__t/heads.jsonl", True),
        "walk_up_to_key": read(f"{ws}/../../../keys/forge-token"),
        "read_key_via_symlink": read(f"{ws}/evil-link"),
        "list_home": list_home,
        "append_ledger": append(f"{home}/ledger/demo__t/tick.jsonl", True),
        "append_run_ledger": append(f"{home}/ledger/demo__t/runs/r1.jsonl", True),
        "truncate_ledger": lambda: os.truncate(f"{home}/ledger/demo__t/tick.jsonl", 0),
        "create_key": append(f"{home}/keys/planted"),
        "write_cache": append(f"{home}/cache/planted"),
        "write_forge": append(f"{home}/forge/planted"),
        "write_config": append(f"{home}/outerloop.toml", True),
        "write_other_run": append(f"{other}/planted"),
        "write_kernel_clone": append(f"{kernel}/planted"),
        "forge_job_exit_code": append(f"{p['job_dir']}/exit_code", True),
        "read_other_environ": read(f"/proc/{p['helper_pid']}/environ"),
        "signal_outside": lambda: os.kill(p["helper_pid"], 0),
    }
    work_env = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b",
                    GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@b")

    def git():
        repo = os.path.join(ws, "repo")
        os.makedirs(repo, exist_ok=True)
        for argv in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "x"],
                     ["git", "status", "--short"]):
            subprocess.run(argv, cwd=repo, env=work_env, check=True, capture_output=True)

    def tcp():
        with socket.create_connection(("127.0.0.1", p["port"]), timeout=5) as conn:
            conn.sendall(b"hi")

    def tmp():
        with open(os.path.join(os.environ["TMPDIR"], "scratch.txt"), "w") as handle:
            handle.write("x")

    def caps():
        text = Path("/proc/self/status").read_text()
        status = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if p["expect_confined"] and (int(status["CapEff"].strip(), 16) != 0
                                     or status["NoNewPrivs"].strip() != "1"):
            raise OSError(errno.EPERM, f"caps {status['CapEff'].strip()}")

    controls = {
        "write_workspace": lambda: Path(f"{ws}/ok.txt").write_text("ok"),
        "write_tmpdir": tmp,
        "python": lambda: subprocess.run([sys.executable, "-c", "import ssl, json"],
                                         check=True),
        "git": git,
        "tcp_loopback": tcp,
        "caps_dropped": caps,
    }
    if shutil.which("node"):
        controls["node"] = lambda: subprocess.run(["node", "-e", "0"], check=True)
    out = {"leaks": {k: attempt(v) for k, v in leaks.items()},
           "controls": {k: attempt(v) for k, v in controls.items()}}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
