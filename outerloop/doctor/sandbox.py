"""``[sandbox]``: the sandbox in force, proved by a confined child
(``outerloop.sandbox.proof``)."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok


def check_sandbox(settings: Settings) -> list[Check]:
    from outerloop.sandbox.proof import prove

    proof = prove(settings)
    if proof.ok:
        return [ok("sandbox", proof.detail)]
    return [fail("sandbox", proof.detail, proof.hint)]
