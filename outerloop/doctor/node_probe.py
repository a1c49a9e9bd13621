"""What doctor's probe job runs on a compute node
(``python -m outerloop.doctor.node_probe HOME [--clis-only]``): the sandbox proof of
``sandbox/proof.py`` under the settings the job was given, and ``<cli> --version`` of
every agent CLI the home's seats use, as the node's PATH finds it, printed as one JSON
line (``ok``, ``detail``, ``hint``, ``host``, ``clis``; ``--clis-only``: no proof, for
local compute, where the sandbox check already proved this host). The job's
``[compute] setup`` lines ran before it, in the job's own shell, as in every job."""

from __future__ import annotations

import json
import os
import socket
import sys

from outerloop.config import Settings, load_settings
from outerloop.errors import OuterloopError
from outerloop.sandbox.proof import PROOF_DIR, Proof, prove

CLIS_ONLY = "--clis-only"


def cli_binaries(settings: Settings) -> list[str]:
    """The agent CLI binaries the home's seats run (agent slots, ``[harness]``, judges)."""
    from outerloop.fleet import all_seats
    from outerloop.kinds import MODEL_CLIS

    found: list[str] = []
    for seat in all_seats(settings):
        kind = seat.harness.kind
        if kind == "scripted":
            continue
        binary = seat.harness.binary or MODEL_CLIS[kind].binary
        if binary and binary not in found:
            found.append(binary)
    return found


def cli_versions(settings: Settings) -> dict[str, dict[str, str]]:
    """Each binary's ``--version`` here (``{"version": ...}``) or why not (``{"error"}``)."""
    from outerloop.errors import ConfigError
    from outerloop.harness.agent_cli import binary_version

    out: dict[str, dict[str, str]] = {}
    for binary in cli_binaries(settings):
        try:
            out[binary] = {"version": binary_version(binary)}
        except ConfigError as exc:
            out[binary] = {"error": str(exc).split("; fix:")[0]}
    return out


def main(argv: list[str]) -> int:
    host = socket.gethostname()
    clis: dict[str, dict[str, str]] = {}
    try:
        settings = load_settings(argv[1])
        clis = cli_versions(settings)
        proof = Proof(True, "not asked", "") if CLIS_ONLY in argv else prove(
            settings, where=f"{PROOF_DIR}-{host}-{os.getpid()}")
    except (IndexError, OuterloopError) as exc:
        proof = Proof(False, f"the probe could not load the settings: {exc}",
                      "run doctor from the home's own interpreter")
    print(json.dumps({"ok": proof.ok, "detail": proof.detail, "hint": proof.hint,
                      "host": host, "clis": clis}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
