"""What doctor's probe job runs on a compute node
(``python -m outerloop.doctor.node_probe HOME``): the sandbox proof of
``sandbox/proof.py`` under the settings the job was given, printed as one JSON line
(``ok``, ``detail``, ``hint``, ``host``). The job's ``[compute] setup`` lines ran
before it, in the job's own shell, as in every job."""

from __future__ import annotations

import json
import os
import socket
import sys

from outerloop.config import load_settings
from outerloop.errors import OuterloopError
from outerloop.sandbox.proof import PROOF_DIR, Proof, prove


def main(argv: list[str]) -> int:
    host = socket.gethostname()
    try:
        settings = load_settings(argv[1])
        proof = prove(settings, where=f"{PROOF_DIR}-{host}-{os.getpid()}")
    except (IndexError, OuterloopError) as exc:
        proof = Proof(False, f"the probe could not load the settings: {exc}",
                      "run doctor from the home's own interpreter")
    print(json.dumps({"ok": proof.ok, "detail": proof.detail, "hint": proof.hint,
                      "host": host}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
