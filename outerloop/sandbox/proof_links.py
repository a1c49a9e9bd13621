"""Prove the kernel follows no symlink an agent plants (``outerloop doctor``).

A confined child plants, in its own workspace, a link to a ledger file and a link to
``keys/``; the kernel side then appends nothing to the first and reads nothing of a
key through the second, through ``sandbox/beneath.py``, and both must be refused. The
probe does no harm even if the protection were broken: it appends zero bytes and
discards what it reads.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from outerloop.config import Settings
from outerloop.sandbox import beneath
from outerloop.sandbox.base import SandboxError
from outerloop.sandbox.confine import for_run
from outerloop.sandbox.proof import Proof, _targets

PROOF_DIR = ".links-proof"
TIMEOUT_S = 60
PLANT = ("import os, sys\nkeys, ledger = sys.argv[1:3]\n"
         "os.symlink(keys, 'ask')\nos.symlink(ledger, 'log.jsonl')\nprint('planted')\n")


def prove_no_follow(settings: Settings) -> Proof:
    """Plant the links from inside the sandbox (or unconfined when it is off), then
    check the kernel's file operations refuse both."""
    root = settings.home / "runs" / PROOF_DIR
    ws, scratch = root / "ws", root / "home"
    key, ledger = _targets(settings.home)
    keys = key.parent if key.is_file() else key
    try:
        ws.mkdir(parents=True, exist_ok=True)
        scratch.mkdir(exist_ok=True)
        argv = [sys.executable, "-I", "-c", PLANT, str(keys), str(ledger)]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch)}
        argv, env = for_run(settings).command(argv, env, workdir=ws, scratch=scratch)
        done = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
        if "planted" not in done.stdout:
            return Proof(False, f"the link probe did not run: {done.stderr[-300:]}",
                         "see docs/security.md")
        followed = []
        for what, action in (("appending to a planted ledger link",
                              lambda: beneath.append(ws, "log.jsonl", b"")),
                             ("reading a key through a planted keys/ link",
                              lambda: beneath.read(ws, f"ask/{key.name}", 0))):
            try:
                action()
                followed.append(what)
            except beneath.SymlinkRefused:
                continue
            except OSError:
                followed.append(f"{what} (not refused as a symlink)")
    except (OSError, SandboxError, subprocess.TimeoutExpired) as exc:
        return Proof(False, f"the link probe could not run: {exc}", "see docs/security.md")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    how = "openat2" if beneath.openat2_available() else "an O_NOFOLLOW descriptor walk"
    if followed:
        return Proof(False, f"kernel file operations followed an agent's link: "
                            f"{'; '.join(followed)}", "report this")
    return Proof(True, f"kernel file operations refused the agent's planted links ({how})")
