"""``[sandbox]``: the sandbox in force, proved by a confined child
(``outerloop.sandbox.proof``)."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok


def check_sandbox(settings: Settings) -> list[Check]:
    from outerloop.sandbox.proof import prove

    proof = prove(settings)
    if proof.ok:
        return [ok("sandbox", proof.detail), _links(settings)]
    return [fail("sandbox", proof.detail, proof.hint), _links(settings)]


def _links(settings: Settings) -> Check:
    """Kernel file operations under agent-writable dirs refuse planted symlinks."""
    from outerloop.sandbox.proof_links import prove_no_follow

    proof = prove_no_follow(settings)
    return ok("agent links", proof.detail) if proof.ok else fail("agent links", proof.detail,
                                                                 proof.hint)
