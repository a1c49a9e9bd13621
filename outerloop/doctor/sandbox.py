"""``[sandbox]``: the sandbox in force, proved by a confined child
(``outerloop.sandbox.proof``), and a warning when a bwrap child could reach the host's
abstract unix sockets (bwrap shares the network namespace, which holds them)."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok, warn

MAX_LISTED = 5


def check_sandbox(settings: Settings) -> list[Check]:
    from outerloop.sandbox.confine import for_run
    from outerloop.sandbox.proof import abstract_listeners, prove

    proof = prove(settings)
    checks = [ok("sandbox", proof.detail) if proof.ok
              else fail("sandbox", proof.detail, proof.hint), _links(settings)]
    if proof.ok and for_run(settings).kind == "bwrap" and (found := abstract_listeners()):
        listed = ", ".join(found[:MAX_LISTED]) + (" ..." if len(found) > MAX_LISTED else "")
        checks.append(warn("sandbox abstract sockets",
                           f"bwrap children can connect to {len(found)} abstract unix "
                           f"socket(s) of this host: {listed}",
                           "set [sandbox] kind = \"landlock\" (it scopes abstract sockets "
                           "to the sandbox), or stop the service listening there"))
    return checks


def _links(settings: Settings) -> Check:
    """Kernel file operations under agent-writable dirs refuse planted symlinks."""
    from outerloop.sandbox.proof_links import prove_no_follow

    proof = prove_no_follow(settings)
    return ok("agent links", proof.detail) if proof.ok else fail("agent links", proof.detail,
                                                                 proof.hint)
