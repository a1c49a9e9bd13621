"""Prove the sandbox in force: a confined child tries to read ``keys/`` and append to
the ledger, and both must be refused (``outerloop doctor`` shows the result).

The probe can do no harm even if the sandbox were broken: it opens a key file and
reads nothing, and opens a ledger file for appending and writes nothing. A positive
control (a file written in its own workspace) shows the child really ran.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from outerloop.config import Settings
from outerloop.sandbox.base import SandboxError
from outerloop.sandbox.confine import for_run
from outerloop.sandbox.resolve import in_force, off_warning

PROOF_DIR = ".sandbox-proof"
TIMEOUT_S = 60
CHILD = r"""
import json, os, sys
key, ledger, ws = sys.argv[1:4]
out = {}
def attempt(name, action):
    try:
        action()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = type(exc).__name__
def read_key():
    if os.path.isdir(key):
        os.listdir(key)
    else:
        os.close(os.open(key, os.O_RDONLY))
attempt("read keys/", read_key)
attempt("append to the ledger",
        lambda: os.close(os.open(ledger, os.O_WRONLY | os.O_APPEND)))
attempt("write its workspace", lambda: open(os.path.join(ws, "ok"), "w").close())
print(json.dumps(out))
"""


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


def prove(settings: Settings) -> Proof:
    """Run the probe under the sandbox the settings give a session."""
    name = in_force(settings.sandbox)
    warning = off_warning(settings.sandbox)
    try:
        confinement = for_run(settings)
    except SandboxError as exc:
        return Proof(False, f"{name}: {exc}", "see docs/security.md")
    if confinement.kind == "off":
        return Proof(False, warning or "sandbox off")
    root = settings.home / "runs" / PROOF_DIR
    ws, scratch = root / "ws", root / "home"
    ws.mkdir(parents=True, exist_ok=True)
    scratch.mkdir(exist_ok=True)
    key, ledger = _targets(settings.home)
    try:
        argv, env = confinement.command(
            [sys.executable, "-I", "-c", CHILD, str(key), str(ledger), str(ws)],
            {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch), "LANG": "C.UTF-8"},
            workdir=ws, scratch=scratch)
        done = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
        seen = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        return Proof(False, f"{name}: the probe could not run: {exc}", "see docs/security.md")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    refused = [k for k in ("read keys/", "append to the ledger") if seen.get(k) not in
               (None, "allowed")]
    if seen.get("write its workspace") != "allowed":
        ran = seen or done.stderr[-300:]
        return Proof(False, f"{name}: the probe did not run normally ({ran})",
                     "see docs/security.md")
    if len(refused) != 2:
        leaks = [k for k in ("read keys/", "append to the ledger") if k not in refused]
        return Proof(False, f"{name}: a confined child could {', '.join(leaks)}",
                     "report this; set [sandbox] kind to the other backend meanwhile")
    return Proof(True, f"{name}: a confined child was refused reading keys/ "
                       f"({seen['read keys/']}) and appending to the ledger "
                       f"({seen['append to the ledger']})")
